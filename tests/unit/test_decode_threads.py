"""Decoding on worker threads gives what one thread gives, byte for byte, and the thread count
follows the process's affinity, its cgroup quota and XPROF_WIDGETS_THREADS."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from xprof_widgets.profile import threads, xspace
from xprof_widgets.synthetic import write_synthetic

DATA = Path(__file__).parents[1] / "data"
FIXTURES = sorted(p for p in DATA.rglob("*.xplane.pb"))


def _decoded(path: Path, monkeypatch: pytest.MonkeyPatch, n_threads: int, chunk: int):
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", str(n_threads))
    monkeypatch.setattr(xspace, "_CHUNK_EVENTS", chunk)
    return xspace.decode_xspace(path.read_bytes(), str(path), "host")


def _same(a, b) -> None:
    for name in ("start_ps", "duration_ps", "meta", "depth", "meta_section"):
        left, right = getattr(a, name), getattr(b, name)
        assert left.dtype == right.dtype, name
        assert np.array_equal(left, right), name
    assert np.array_equal(a.details._record, b.details._record)
    assert a.details._record.dtype == b.details._record.dtype
    for name in ("derived", "counter_values"):
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            assert np.array_equal(left, right, equal_nan=left.dtype.kind == "f"), name
    assert a.tracks == b.tracks
    assert a.sections == b.sections
    assert (a.names, a.display_names, a.meta_stats) == (b.names, b.display_names, b.meta_stats)
    assert a.warnings == b.warnings
    assert a.hlo_protos == b.hlo_protos
    assert a.base_ns == b.base_ns
    assert (a.deferred is None) == (b.deferred is None)
    if a.deferred is not None:  # and the rows made later, from what each decode kept
        _same(a.with_derived_rows(), b.with_derived_rows())


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
@pytest.mark.parametrize("chunk", [1 << 16, 7])
def test_two_threads_decode_every_fixture_as_one(path: Path, chunk: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 7 events cut lines in the middle, so the threads share lines too."""
    one = _decoded(path, monkeypatch, 1, 1 << 16)
    _same(one, _decoded(path, monkeypatch, 2, chunk))
    _same(one, _decoded(path, monkeypatch, 3, chunk))


@pytest.mark.parametrize(("kind", "extras"), [("tpu", {}), ("gpu", {}),
                                             ("tpu", {"allocator": True, "custom_calls": True}),
                                             ("gpu", {"allocator": True})])
def test_threads_decode_a_synthetic_profile_as_one(kind: str, extras: dict, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With derived rows, internal events (allocator) and counters (custom calls) too."""
    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 60_000, kind=kind, **extras)
    one = _decoded(path, monkeypatch, 1, 1 << 16)
    assert one.n_events > 50_000
    _same(one, _decoded(path, monkeypatch, 2, 1000))
    _same(one, _decoded(path, monkeypatch, 4, 333))


def test_a_corrupt_event_is_reported_where_one_thread_reports_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 20_000, kind="tpu")
    data = bytearray(path.read_bytes())
    data[len(data) // 3:len(data) // 3 + 40] = b"\xff" * 40  # a varint of 40 bytes
    path.write_bytes(bytes(data))
    messages = set()
    for n_threads, chunk in ((1, 1 << 16), (2, 100), (4, 7)):
        with pytest.raises(xspace.ProfileError) as caught:
            _decoded(path, monkeypatch, n_threads, chunk)
        messages.add(str(caught.value))
    assert len(messages) == 1
    assert "not a readable XSpace" in messages.pop()


def test_the_override_wins_and_a_bad_one_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda _: {0, 1, 2, 3, 4, 5})
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: None)
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "3")
    assert threads.decode_threads() == 3
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "0")
    assert threads.decode_threads() == 1
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "many")
    assert threads.decode_threads() == 6
    monkeypatch.delenv("XPROF_WIDGETS_THREADS")
    assert threads.decode_threads() == 6


def test_the_cgroup_quota_caps_the_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XPROF_WIDGETS_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda _: set(range(16)))
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 2.5)
    assert threads.decode_threads() == 3
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 0.2)
    assert threads.decode_threads() == 1
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 64.0)
    assert threads.decode_threads() == 16


@pytest.mark.parametrize(("v2", "v1", "expected"), [
    ("250000 100000\n", None, 2.5),
    ("max 100000\n", ("150000", "100000"), None),  # v2 says no quota: v1 is not read
    (None, ("-1", "100000"), None),
    (None, ("300000", "100000"), 3.0),
    (None, None, None),
])
def test_the_cgroup_quota_is_read_from_v2_then_v1(v2, v1, expected, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    v2_file, quota, period = tmp_path / "cpu.max", tmp_path / "quota", tmp_path / "period"
    if v2 is not None:
        v2_file.write_text(v2)
    if v1 is not None:
        quota.write_text(v1[0])
        period.write_text(v1[1])
    monkeypatch.setattr(threads, "_CGROUP_QUOTAS", ((str(v2_file), None),
                                                    (str(quota), str(period))))
    assert threads.cgroup_cpu_quota() == expected


def test_balanced_groups_share_the_weight() -> None:
    groups = threads.balanced([100, 1, 1, 50, 50, 0], 2)
    assert sorted(k for g in groups for k in g) == list(range(6))
    loads = sorted(sum([100, 1, 1, 50, 50, 0][k] for k in g) for g in groups)
    assert loads == [101, 101]
    assert threads.balanced([5, 5], 8) == [[0], [1]]
    assert threads.run_parts(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_metadata_ids_read_from_the_header_bytes_are_those_upb_parses(path: Path) -> None:
    """The events decode while the headers parse only when the ids scanned from the bytes
    number the rows as the parsed headers do; else they decode a second time."""
    data = path.read_bytes()
    buf = np.frombuffer(data, np.uint8)
    planes, spans, *_ = xspace._layout(buf, str(path), 1)
    plane_spans = [spans[spans[:, 0] == k] for k in range(planes.shape[0])]
    headers = [xspace._parse_header(xspace.XPlane, data, s)[0] for s in plane_spans]
    parsed = xspace._PlaneTables(headers).row_maps
    scanned = xspace._scanned_row_maps(buf, plane_spans)
    assert xspace._same_rows(scanned, parsed)
    assert sum(ids.shape[0] for ids, _ in parsed) == sum(len(h.event_metadata) for h in headers)


def test_the_first_error_in_the_file_wins_over_a_later_one_the_plane_walk_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines are walked after the planes (and on other threads): an event whose length is
    malformed, before a malformed field ending the file, is the one reported."""
    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 20_000, kind="tpu")
    good = _decoded(path, monkeypatch, 1, 1 << 16)
    record = int(good.details._record[good.tracks[len(good.tracks) // 2].first])
    data = bytearray(path.read_bytes())
    data[record + 1:record + 12] = b"\xff" * 11  # the event's length: a varint of 11 bytes
    path.write_bytes(bytes(data) + b"\x0f")  # and a field of wire type 7 at the end
    for n_threads, chunk in ((1, 1 << 16), (2, 100), (4, 7)):
        with pytest.raises(xspace.ProfileError, match=f"at byte {record} of {len(data) + 1}"):
            _decoded(path, monkeypatch, n_threads, chunk)


def test_each_balanced_keeps_order_and_small_work_on_this_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "3")
    seen: list[int] = []

    def work(item: int) -> int:
        seen.append(threading.get_ident())
        return item * 10

    weights = [5, 1, 9, 2, 7]
    assert threads.each_balanced(work, [0, 1, 2, 3, 4], weights) == [0, 10, 20, 30, 40]
    assert set(seen) == {threading.get_ident()}, "under THREADED_FROM events: one thread"
    seen.clear()
    monkeypatch.setattr(threads, "THREADED_FROM", 0)
    assert threads.each_balanced(work, [0, 1, 2, 3, 4], weights) == [0, 10, 20, 30, 40]
    assert len(set(seen)) > 1  # a pool worker may take two groups, as fast as they are
