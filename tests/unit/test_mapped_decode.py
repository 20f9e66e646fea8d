"""A local XSpace is decoded from a read-only mapping: the same profile as from its bytes, its
pages handed back after decoding, a file changed on disk refused with a clear error instead of
a SIGBUS; the trace index built on worker threads equals the one-thread index."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from test_decode_threads import FIXTURES, _same

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile import mapped, xspace, xspace_details
from xprof_widgets.synthetic import write_synthetic
from xprof_widgets.trace.index import TraceIndex

DATA = Path(__file__).parents[1] / "data"


def _mapping_rss_kb(path: Path) -> int:
    """Resident kB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 120_000, kind="tpu", allocator=True)
    assert path.stat().st_size > mapped.MIN_MAPPED_BYTES
    return path


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_a_mapped_file_decodes_as_its_bytes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture mapped (no size floor), its fill handing pages back after every chunk."""
    monkeypatch.setattr(mapped, "MIN_MAPPED_BYTES", 0)
    monkeypatch.setattr(xspace, "_RELEASE_BATCH", 1)
    monkeypatch.setattr(xspace, "_CHUNK_EVENTS", 1000)
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "2")
    data = mapped.map_file(str(path))
    assert isinstance(data, mapped.MappedFile) == (path.stat().st_size > 0)
    from_map = xspace.decode_xspace(data, str(path), "host")
    from_bytes = xspace.decode_xspace(path.read_bytes(), str(path), "host")
    _same(from_bytes, from_map)
    events = np.arange(0, from_map.n_events, max(1, from_map.n_events // 50))
    events = events[from_map.details._in_file(events)]
    assert [from_map.details.stats(int(e)) for e in events] == \
        [from_bytes.details.stats(int(e)) for e in events]
    for name in ("flow", "group_id", "hlo_op"):
        left = from_map.details.stat_column(events, name)
        right = from_bytes.details.stat_column(events, name)
        assert left.tolist() == right.tolist()


def test_the_decode_hands_the_file_pages_back(synthetic: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xspace_details, "_RELEASE_AFTER", 10_000)  # a pass over "many" events
    profile = xw.open_profile(str(synthetic))
    host = profile._hosts[0]
    assert isinstance(host.details._data, mapped.MappedFile)
    size_kb = synthetic.stat().st_size // 1024
    assert _mapping_rss_kb(synthetic) < size_kb // 8
    events = np.arange(profile.n_events)
    profile.stat_column(events, "hlo_op")  # a tool's pass over every event
    assert _mapping_rss_kb(synthetic) < size_kb // 8
    assert profile.event_stats(int(events[-1])) is not None  # a click reads back its page


@pytest.mark.parametrize("change", ["truncated", "rewritten", "deleted"])
def test_a_file_changed_after_opening_is_refused_not_read(synthetic: Path, change: str) -> None:
    """Reading a truncated mapping would kill the kernel (SIGBUS): the details refuse first."""
    profile = xw.open_profile(str(synthetic))
    details = profile._hosts[0].details
    event = int(np.flatnonzero(details._in_file(np.arange(profile.n_events)))[-1])
    before = profile.event_stats(event)
    if change == "truncated":
        with open(synthetic, "r+b") as f:
            f.truncate(synthetic.stat().st_size // 2)
    elif change == "rewritten":
        synthetic.write_bytes(synthetic.read_bytes() + b"\0")
    else:
        synthetic.unlink()
    words = "gone" if change == "deleted" else "changed on disk"
    for read in (lambda: profile.event_stats(event),
                 lambda: profile.stat_column(np.arange(profile.n_events), "hlo_op")):
        with pytest.raises(ProfileError, match=f"{re.escape(str(synthetic))}.*{words}"):
            read()
    assert before  # what was read before the change stays valid
    assert profile.tracks.shape[0]  # and the columns, which are the kernel's own memory;
    # the derived rows, which would read the file, are left out and the warnings say why
    assert len(profile.tracks) == len(profile.file_tracks)
    assert any(w.startswith(f"{synthetic}: the Framework Ops") and words in w
               for w in profile.warnings)


def test_small_files_and_unmappable_ones_are_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    small = tmp_path / "small.xplane.pb"
    write_synthetic(small, 2_000, kind="tpu")
    assert small.stat().st_size < mapped.MIN_MAPPED_BYTES
    assert isinstance(mapped.map_file(str(small)), bytes)

    def refuse(*args, **kwargs):
        raise OSError("mmap not supported on this mount")

    monkeypatch.setattr(mapped, "MIN_MAPPED_BYTES", 0)
    monkeypatch.setattr(mapped.MappedFile, "__new__", refuse)
    assert mapped.map_file(str(small)) == small.read_bytes()
    with pytest.raises(ProfileError, match="missing.xplane.pb: cannot be read"):
        mapped.map_file(str(tmp_path / "missing.xplane.pb"))


_INDEX_ARRAYS = ("perm", "seg_start", "seg_list", "list_level", "list_off", "list_len", "cuts",
                 "longest")


@pytest.mark.parametrize("path", [*FIXTURES, None],
                         ids=lambda p: "synthetic" if p is None else str(p.relative_to(DATA)))
def test_the_index_built_on_threads_is_the_one_thread_index(
        path: Path | None, synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        profile = xw.open_profile(str(path or synthetic))
    except ProfileError as exc:
        assert "holds no events" in str(exc)
        pytest.skip("a profile of HLO protos alone: no events to index")
    built = []
    for n_threads in (1, 2, 3):
        monkeypatch.setenv("XPROF_WIDGETS_THREADS", str(n_threads))
        built.append(TraceIndex(profile))
    for other in built[1:]:
        for name in _INDEX_ARRAYS:
            left, right = getattr(built[0], name), getattr(other, name)
            assert left.dtype == right.dtype and np.array_equal(left, right), name
        for left, right in zip(built[0].rmq, other.rmq, strict=True):
            assert np.array_equal(left, right)
