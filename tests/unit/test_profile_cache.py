"""One decoded profile per file in the kernel (profile/cache.py): reopening, a changed file,
`close`, run and host picks, widgets, remote stores and the memory guard."""

from __future__ import annotations

import gc
import os
import re
import shutil
import weakref
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.profile import locate
from xprof_widgets.profile.cache import DECODE_SETTINGS, PROFILES
from xprof_widgets.trace import trace_index

DATA = Path(__file__).resolve().parents[1] / "data"
SMALL = DATA / "jax_cpu_demo.xplane.pb"


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "host.xplane.pb"
    shutil.copyfile(SMALL, path)
    return path


def test_reopening_a_file_gives_the_same_profile(small, monkeypatch):
    first = xw.open_profile(small)
    assert xw.open_profile(small) is first
    assert xw.open_profile(os.fspath(small)) is first
    monkeypatch.chdir(small.parent)
    assert xw.open_profile(small.name) is first  # keyed by the resolved path
    link = small.parent / "link.xplane.pb"
    link.symlink_to(small)
    assert xw.open_profile(link) is first


def test_a_changed_file_is_decoded_again_and_the_old_profile_dropped(small):
    first = xw.open_profile(small)
    stat = small.stat()
    os.utime(small, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = xw.open_profile(small)
    assert second is not first
    assert len(PROFILES) == 1  # the old one, still held here, is no longer the cache's
    assert xw.open_profile(small) is second
    assert first.n_events == second.n_events  # the old one still works for whoever holds it


def test_a_profile_nothing_holds_is_freed(small):
    profile = xw.open_profile(small)
    trace_index(profile)  # a profile and its index refer to each other
    ref = weakref.ref(profile)
    del profile
    gc.collect()
    assert ref() is None
    assert len(PROFILES) == 0


def test_close_frees_the_profile_for_good(small):
    profile = xw.open_profile(small)
    index = weakref.ref(trace_index(profile))
    columns = weakref.ref(profile._hosts[0])
    xw.close(profile)
    assert index() is None and columns() is None  # freed at once, nothing left to collect
    assert len(PROFILES) == 0
    assert xw.open_profile(small) is not profile
    with pytest.raises(xw.ProfileError, match=r"host\.xplane\.pb: this profile was closed"):
        profile.events()
    with pytest.raises(xw.ProfileError, match="open it again with xw.open_profile"):
        _ = profile.tracks
    with pytest.raises(xw.ProfileError, match="closed"):
        xw.TraceViewer(profile)
    assert "closed" in repr(profile)
    profile.close()  # closing twice is harmless


def test_runs_and_hosts_picked_are_different_profiles(make_logdir):
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": SMALL, "b.xplane.pb": SMALL},
                          "2026_01_02_00_00_00": {"a.xplane.pb": SMALL}})
    newest = xw.open_profile(logdir)
    older = xw.open_profile(logdir, run="2026_01_01_00_00_00")
    host_a = xw.open_profile(logdir, run="2026_01_01_00_00_00", host="a")
    host_b = xw.open_profile(logdir, run="2026_01_01_00_00_00", host="b")
    assert len({id(p) for p in (newest, older, host_a, host_b)}) == 4
    assert xw.open_profile(logdir, run="2026_01_01_00_00_00", host=["b", "a"]) is older
    assert older.hosts == ["a", "b"] and host_b.hosts == ["b"]


def test_the_same_files_by_another_path_share_one_profile_labelled_by_the_latest_open(
        make_logdir):
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": SMALL},
                          "2026_01_02_00_00_00": {"a.xplane.pb": SMALL}})
    run_dir = logdir / "plugins" / "profile" / "2026_01_02_00_00_00"
    from_logdir = xw.open_profile(logdir)
    assert len(from_logdir.runs) == 2
    from_file = xw.open_profile(run_dir / "a.xplane.pb")
    assert from_file is from_logdir
    assert from_file.source == os.fspath(run_dir / "a.xplane.pb") and len(from_file.runs) == 1
    assert len(xw.open_profile(logdir).runs) == 2  # the suite's run picker reads these


def test_widgets_share_the_profile_and_its_trace_index(small):
    mine = xw.open_profile(small)
    assert xw.TraceViewer(mine).profile is mine
    old = xw.TraceViewer(small)
    new = xw.TraceViewer(small)  # a re-run while the old widget lives
    assert old.profile is new.profile is mine
    assert old.index is new.index is trace_index(mine)
    assert xw.Profiler(small).profile is mine
    assert xw.OpProfile(small).profile is mine


def test_a_closed_widget_lets_go_of_its_profile(small):
    viewer = xw.TraceViewer(small)
    viewer.index  # noqa: B018 - what the view's first request builds
    profile = weakref.ref(viewer.profile)
    suite = xw.Profiler(small)
    suite.tool("trace")
    viewer.close()
    suite.close()
    gc.collect()
    assert profile() is None and len(PROFILES) == 0


def test_decode_settings_are_part_of_the_key(small, monkeypatch):
    first = xw.open_profile(small)
    monkeypatch.setenv("XPROF_WIDGETS_FRAMEWORK_ROWS", "always")
    assert xw.open_profile(small) is not first


def test_a_cached_profile_is_reopened_whatever_the_memory_left(small, tmp_path, monkeypatch):
    first = xw.open_profile(small)
    monkeypatch.setenv("XPROF_WIDGETS_MEMORY_LIMIT", "1kB")
    assert xw.open_profile(small) is first  # the kernel holds it already: nothing to decode
    other = tmp_path / "other.xplane.pb"
    shutil.copyfile(SMALL, other)
    with pytest.raises(xw.ProfileError, match="needs about"):
        xw.open_profile(other)


def test_a_remote_file_is_cached_by_the_version_its_store_gives(tmp_path, monkeypatch):
    fsspec = pytest.importorskip("fsspec")
    store = fsspec.filesystem("memory")
    store.pipe("/cache-test/host.xplane.pb", SMALL.read_bytes())
    try:
        first = xw.open_profile("memory://cache-test")
        assert xw.open_profile("memory://cache-test/host.xplane.pb") is first
        store.pipe("/cache-test/host.xplane.pb", SMALL.read_bytes())  # written again
        assert xw.open_profile("memory://cache-test") is not first
        # a store whose info tells no version: every open decodes
        monkeypatch.setattr(locate, "REMOTE_VERSION_FIELDS", ())
        again = xw.open_profile("memory://cache-test")
        assert xw.open_profile("memory://cache-test") is not again
    finally:
        store.rm("/cache-test", recursive=True)


def test_close_is_a_public_name():
    assert "close" in xw.__all__ and xw.close.__module__ == "xprof_widgets.opening"


def test_every_setting_a_decoder_reads_is_in_the_key():
    """threads.py's XPROF_WIDGETS_THREADS is not in it: the thread count changes no decoded
    byte (test_decode_threads)."""
    package = Path(xw.__file__).parent / "profile"
    read = {name for path in package.glob("*.py")
            if path.name not in ("memory_guard.py", "cache.py", "threads.py")
            for name in re.findall(r"environ\.get\(\"(XPROF_WIDGETS_\w+)", path.read_text())}
    assert read == set(DECODE_SETTINGS)
