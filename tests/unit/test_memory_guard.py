"""The memory guard: a run larger than the kernel can take is refused before decoding, with the
size needed, the memory available and the ways out."""

from __future__ import annotations

import gzip

import pytest

import xprof_widgets as xw
from xprof_widgets.profile import memory_guard
from xprof_widgets.profile.locate import FileSystem, find_runs


def test_a_run_over_the_limit_is_refused_naming_sizes_and_ways_out(make_logdir, tpu_path,
                                                                   monkeypatch):
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": tpu_path,
                                                  "b.xplane.pb": tpu_path}})
    need = 2 * tpu_path.stat().st_size * memory_guard.PEAK_PER_FILE_BYTE["xspace"]
    limit = 0.75 * need  # one host fits within the headroom, two do not
    monkeypatch.setenv(memory_guard.LIMIT_ENV, f"{limit / 1e6:.3f}MB")
    with pytest.raises(xw.ProfileError) as caught:
        xw.open_profile(logdir)
    message = str(caught.value)
    assert f"needs about {need / 1e6:.1f} MB" in message
    assert f"has {limit / 1e6:.1f} MB available" in message
    assert "host= (one or a few of: a, b)" in message and "client=" in message
    assert xw.open_profile(logdir, host="a").hosts == ["a"]  # one host fits


def test_the_guard_can_be_turned_off_and_lets_what_fits_through(make_logdir, tpu_path,
                                                                monkeypatch):
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": tpu_path}})
    monkeypatch.setenv(memory_guard.LIMIT_ENV, "1kB")
    with pytest.raises(xw.ProfileError, match="needs about"):
        xw.open_profile(logdir)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, "off")
    assert xw.open_profile(logdir).hosts == ["a"]
    monkeypatch.delenv(memory_guard.LIMIT_ENV)
    assert memory_guard.available_bytes() > 0  # MemAvailable (or psutil) is read here
    assert xw.open_profile(logdir).hosts == ["a"]


def test_a_gzipped_trace_counts_by_its_json_text(tmp_path):
    text = b'{"traceEvents": [' + b",".join(
        b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": %d, "dur": 1}' % i
        for i in range(20000)) + b"]}"
    path = tmp_path / "t.trace.json.gz"
    path.write_bytes(gzip.compress(text))
    fs, runs = find_runs(str(path))
    per_byte = memory_guard.PEAK_PER_FILE_BYTE["chrome"]
    assert memory_guard.estimate_bytes(fs, runs[0].hosts) == len(text) * per_byte
    cut = tmp_path / "cut.trace.json.gz"
    cut.write_bytes(gzip.compress(text)[:-6])  # a stray trailer is not believed
    _, runs = find_runs(str(cut))
    assert memory_guard.estimate_bytes(FileSystem(str(cut)), runs[0].hosts) < len(text) * per_byte


@pytest.mark.parametrize("text, size", [("2GB", 2e9), ("512 MiB", 512 * 2**20), ("1e9", 1e9),
                                        ("3gib", 3 * 2**30)])
def test_limits_parse(text, size):
    assert memory_guard.parse_size(text) == int(size)


def test_a_bad_limit_says_what_is_expected(monkeypatch):
    monkeypatch.setenv(memory_guard.LIMIT_ENV, "lots")
    with pytest.raises(xw.ProfileError, match="expected a size such as 4GB"):
        memory_guard.available_bytes()


def test_derived_rows_that_do_not_fit_are_left_out_with_a_warning(tmp_path, monkeypatch):
    from xprof_widgets.synthetic import write_synthetic

    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 60_000, kind="tpu")
    need_open = path.stat().st_size * memory_guard.PEAK_PER_FILE_BYTE["xspace"]
    limit = need_open / memory_guard.HEADROOM * 1.01  # the decode fits, the rows do not
    monkeypatch.setenv(memory_guard.LIMIT_ENV, f"{limit / 1e6:.3f}MB")
    profile = xw.open_profile(path)
    n = profile._hosts[0].deferred.args[0].decoding.start.shape[0]
    assert n * memory_guard.DERIVED_ROWS_PEAK_PER_EVENT > limit
    assert len(profile.tracks) == len(profile.file_tracks)  # the timeline opens without them
    [warning] = [w for w in profile.warnings if "were not derived" in w]
    assert warning.startswith(f"{path}: the Framework Ops, Framework Name Scope, Source code "
                              "and Host Offload Ops rows were not derived: making them from "
                              f"{n:,} events needs about")
    assert f"has {limit / 1e6:.1f} MB available" in warning
    n_tracks = len(profile.tracks)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, "off")
    xw.close(profile)
    assert len(xw.open_profile(path).tracks) > n_tracks  # with room: made


def test_the_planes_made_at_once_count_in_the_derived_rows_need(tmp_path, monkeypatch):
    """Each thread makes a plane, and a plane's temporaries are some 180 bytes an event: the
    need is judged for the largest planes one thread each."""
    from xprof_widgets.profile import xspace_derived
    from xprof_widgets.synthetic import write_synthetic

    path = tmp_path / "host.xplane.pb"
    write_synthetic(path, 60_000, kind="tpu", devices=4)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, "off")
    d = xw.open_profile(path)._hosts[0].deferred.args[0].decoding
    sizes = sorted((s.stop - s.start for s in map(d.plane_events, set(d.lines[:, 0].tolist()))),
                   reverse=True)
    assert len(sizes) == 4 and sizes[0] > 0
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "99")
    assert xspace_derived._in_flight(d) == sizes[0], "a small file's planes: on one thread"
    monkeypatch.setattr("xprof_widgets.profile.threads.THREADED_FROM", 0)
    needs = {}
    for threads in (1, 2, 99):
        monkeypatch.setenv("XPROF_WIDGETS_THREADS", str(threads))
        assert xspace_derived._in_flight(d) == sum(sizes[:threads])
        needs[threads] = (d.start.shape[0] * memory_guard.DERIVED_ROWS_PEAK_PER_EVENT
                          + sum(sizes[:threads]) * memory_guard.DERIVED_ROWS_PEAK_PER_EVENT_IN_FLIGHT)
    # Room for one thread's need but not four threads': refused on four threads only.
    room = (needs[1] + needs[99]) / 2 / memory_guard.HEADROOM
    monkeypatch.setattr(memory_guard, "available_bytes", lambda: room)
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "1")
    assert xspace_derived._no_room(d) == ""
    monkeypatch.setenv("XPROF_WIDGETS_THREADS", "99")
    assert "were not derived" in xspace_derived._no_room(d)
