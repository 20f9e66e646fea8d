"""The rows XProf derives for TPU cores and GPU streams are made on first use, not by the
decode: the tools never make them, and making them later gives the profile that making them
first gives (rows, events, metadata, warnings), and the tools the same tables either way."""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xprof_widgets.errors import ProfileError
from xprof_widgets.profile import mapped
from xprof_widgets.profile.model import Profile
from xprof_widgets.profile.xspace import decode_xspace
from xprof_widgets.synthetic import write_synthetic
from xprof_widgets.tools import TOOLS

DATA = Path(__file__).parents[1] / "data"
FIXTURES = sorted(p for p in DATA.rglob("*.xplane.pb") if ".hlo." not in p.name)  # events
DERIVING = [DATA / name for name in ("synthetic_tpu.xplane.pb", "tpu_v6e_inference.xplane.pb",
                                     "synthetic_gpu.xplane.pb")]


def _later(path: Path) -> Profile:
    return Profile([decode_xspace(path.read_bytes(), str(path), "host")], source=str(path))


def _first(path: Path) -> Profile:
    """The rows made before the Profile places the events (as for several hosts)."""
    trace = decode_xspace(path.read_bytes(), str(path), "host").with_derived_rows()
    return Profile([trace], source=str(path))


def _pending(profile: Profile) -> bool:
    return profile._hosts[0].deferred is not None


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_rows_made_later_equal_rows_made_first(path: Path) -> None:
    later, first = _later(path), _first(path)
    n_file = later.n_events
    assert not _pending(first)
    pd.testing.assert_frame_equal(later.tracks, first.tracks)  # makes them
    assert not _pending(later)
    for name in ("start_ps", "duration_ps", "meta", "depth", "derived"):
        assert np.array_equal(getattr(later, name), getattr(first, name)), name
    pd.testing.assert_frame_equal(later.metadata, first.metadata)
    assert later.warnings == first.warnings
    assert (later.origin_ps, later.duration_us) == (first.origin_ps, first.duration_us)
    # Every made event comes after the file's, so no event id of the file's changed.
    assert later.derived[n_file:].all()
    made = later.tracks.index.difference(later.file_tracks.index)
    assert (later.tracks.loc[made, "first_event"] >= n_file).all()
    events = np.flatnonzero(later.derived[:n_file] == 0)[::97]
    assert [later.event_stats(int(e)) for e in events] == \
        [first.event_stats(int(e)) for e in events]


def _tool_tables(profile: Profile) -> dict[str, pd.DataFrame]:
    """Each offered tool's table (the ones that have `to_dataframe`)."""
    tables = {}
    for tool in TOOLS:
        if tool.key == "trace" or not tool.offered_for(profile):
            continue
        widget = getattr(importlib.import_module("xprof_widgets" + tool.module), tool.name)(
            profile)
        if hasattr(widget, "to_dataframe"):
            tables[tool.key] = widget.to_dataframe()
        widget.close()
    return tables


@pytest.mark.parametrize("path", DERIVING, ids=lambda p: p.name)
def test_the_tools_never_make_them_and_answer_the_same_after(path: Path) -> None:
    profile = _later(path)
    assert _pending(profile)
    before = _tool_tables(profile)
    assert len(before) >= 4
    assert _pending(profile), "a tool made the derived rows"
    n_made = len(_first(path).tracks) - len(profile.built_tracks)
    assert n_made > 0 and len(profile.file_tracks) == len(profile.built_tracks)
    profile.derive_rows()
    assert len(profile.tracks) - len(profile.file_tracks) == n_made
    after = _tool_tables(profile)
    assert before.keys() == after.keys()
    for key, table in before.items():
        pd.testing.assert_frame_equal(table, after[key], obj=key)


def test_a_file_over_the_rows_limit_keeps_no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("xprof_widgets.profile.xspace_derived.FRAMEWORK_ROWS_LIMIT", 10)
    profile = _later(DATA / "synthetic_tpu.xplane.pb")
    assert not _pending(profile)
    assert any("were not derived" in w for w in profile.warnings)  # said at the open
    assert len(profile.tracks) == len(profile.file_tracks)


def test_the_rows_are_made_once_when_threads_ask_at_once() -> None:
    profile = _later(DATA / "synthetic_tpu.xplane.pb")
    seen: list[int] = []
    barrier = threading.Barrier(4)

    def ask() -> None:
        barrier.wait()
        seen.append(len(profile.tracks))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and seen[0] == len(_first(DATA / "synthetic_tpu.xplane.pb").tracks)
    assert len(profile.metadata) == len(_first(DATA / "synthetic_tpu.xplane.pb").metadata)


def test_a_file_changed_before_they_are_made_leaves_them_out(tmp_path: Path) -> None:
    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 60_000, kind="gpu")  # its rows read the kernels' stats
    assert path.stat().st_size > mapped.MIN_MAPPED_BYTES
    profile = Profile([decode_xspace(mapped.map_file(str(path)), str(path), "host")],
                      source=str(path))
    assert _pending(profile)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    profile.derive_rows()
    assert len(profile.tracks) == len(profile.file_tracks)
    assert profile.warnings[-1].startswith(f"{path}: the XLA Modules and XLA Ops rows of GPU "
                                           "streams were not derived: the profile file changed "
                                           "on disk since it was opened")
    with pytest.raises(ProfileError, match=r"host\.xplane\.pb.*changed on disk"):
        profile.event_stats(0)  # what reads the file still refuses


def test_the_time_order_is_lexsorts_with_ties_in_file_order() -> None:
    from xprof_widgets.profile.xspace_derived import _time_order

    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(0, 60))
        start = rng.integers(0, 8, n).astype(np.int64) * int(rng.choice([1, 10**12]))
        duration = rng.integers(0, 4, n).astype(np.int64)
        events = rng.permutation(n)[: int(rng.integers(0, n + 1))].astype(np.int64)
        want = events[np.lexsort((-duration[events], start[events]))]
        assert np.array_equal(_time_order(events, start, duration), want)


def test_dense_unique_is_numpys_unique() -> None:
    from xprof_widgets.profile.derived import dense_unique

    rng = np.random.default_rng(3)
    for dtype in (np.int32, np.int64):
        for n in (0, 1, 7, 1000):
            values = rng.integers(0, 50, n).astype(dtype)
            uniques, inverse = dense_unique(values)
            want, want_inverse = np.unique(values, return_inverse=True)
            assert np.array_equal(uniques, want) and uniques.dtype == want.dtype
            assert np.array_equal(inverse, want_inverse)


@pytest.mark.parametrize("path", DERIVING, ids=lambda p: p.name)
def test_planes_made_on_threads_give_one_threads_rows(path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("xprof_widgets.profile.threads.THREADED_FROM", 0)  # small files too
    made = []
    for threads in ("1", "3"):
        monkeypatch.setenv("XPROF_WIDGETS_THREADS", threads)
        profile = _later(path)
        profile.derive_rows()
        made.append(profile)
    one, three = made
    pd.testing.assert_frame_equal(one.tracks, three.tracks)
    pd.testing.assert_frame_equal(one.metadata, three.metadata)
    for name in ("start_ps", "duration_ps", "meta", "depth"):
        assert np.array_equal(getattr(one, name), getattr(three, name)), name
    assert one.warnings == three.warnings
