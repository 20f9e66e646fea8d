"""Multi-host runs opened locally: hosts on the wall clock, per-host parts and their combine,
the steps common to all hosts (XProf's step intersection)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from tests.unit.xspace_builder import build_xspace
from xprof_widgets.analysis.hosts import host_parts
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile, op_profile_part
from xprof_widgets.analysis.step_intersection import common_steps
from xprof_widgets.synthetic import write_synthetic

START_NS = 1_767_225_600_000_000_000


def _host_file(start_ns: int, step_offsets_us: list[int]) -> bytes:
    """A host whose `train` steps start at the given times (us after its own capture start)."""
    events = [("train", us * 1_000_000, 800_000_000, {"step_num": k, "_r": 1})
              for k, us in enumerate(step_offsets_us)]
    return build_xspace([
        {"name": "/host:CPU", "lines": [{"name": "python", "timestamp_ns": 1000,
                                         "events": events}]},
        {"name": "Task Environment", "stats": {"profile_start_time": start_ns}}])


@pytest.fixture(scope="module")
def pod16(tmp_path_factory) -> xw.Profile:
    run = write_synthetic(tmp_path_factory.mktemp("pod16"), 160_000, "tpu", hosts=16)
    return xw.open_profile(run)


def test_hosts_that_started_apart_sit_on_the_wall_clock(make_logdir):
    # host b started capturing 2 ms after host a: its step at 1000 us of its own clock ran
    # at 3000 us of a's.
    logdir = make_logdir({"2026_01_01_00_00_00": {
        "a.xplane.pb": _host_file(START_NS, [1000]),
        "b.xplane.pb": _host_file(START_NS + 2_000_000, [1000])}})
    events = xw.open_profile(logdir).events()
    starts = dict(zip(events["host"], events["start_us"], strict=True))
    assert starts["b"] - starts["a"] == pytest.approx(2000.0)


def test_a_single_host_keeps_its_files_clock(tpu_path):
    profile = xw.open_profile(tpu_path)
    assert profile.origin_ps == round(profile.origin_ns * 1000)
    assert profile.clock_ps == profile.origin_ps + 1_741_722_099_081_044_120 * 1000


def test_per_host_profiles_share_the_decoded_columns(pod16):
    hosts = pod16.per_host()
    assert [h.hosts for h in hosts] == [[h] for h in pod16.hosts]
    one = hosts[3]
    track_base = int(np.flatnonzero(pod16.tracks["host"] == one.hosts[0])[0])
    local = one.tracks.reset_index(drop=True)[["section", "name", "n_events"]]
    merged = pod16.tracks.iloc[track_base:track_base + len(one.tracks)]
    pd.testing.assert_frame_equal(local, merged.reset_index(drop=True)[local.columns])
    shift = pod16.host_shifts_ps[3]
    first = int(merged["first_event"].iat[0])
    assert int(pod16.start_ps[first]) == int(one.start_ps[int(one.tracks["first_event"].iat[0])]) \
        + shift


def test_the_op_profile_of_many_hosts_sums_their_parts(pod16):
    parts = host_parts(pod16, op_profile_part)
    analysis = analyze_op_profile(pod16)
    table = analysis.to_dataframe().set_index(["program_id", "name"])
    by_op = pd.concat([p.part.ops for p in parts]).groupby(["program_id", "name"])
    assert (table["occurrences"] == by_op["occurrences"].sum().reindex(table.index)).all()
    assert np.allclose(table["time_us"] * 1e6, by_op["time_ps"].sum().reindex(table.index))
    assert analysis.device.count == 64  # 16 hosts x 4 cores, as XProf adds cores up
    assert analysis.total_time_ps == sum(p.part.total_time_ps for p in parts)


def test_every_host_of_a_synthetic_pod_runs_every_step(pod16):
    analysis = analyze_input_pipeline(pod16)
    one = analyze_input_pipeline(pod16.per_host()[0])
    assert analysis.steps["step"].tolist() == one.steps["step"].tolist()
    assert (analysis.steps["duration_us"] >= one.steps["duration_us"] - 1e-6).all()
    assert analysis.steps["device"].str.match(r"^t1v-n-\S+ /device:TPU:\d$").all()
    ops = analysis.input_ops.set_index("input_op")["count"]
    assert (ops == 16 * one.input_ops.set_index("input_op")["count"]).all()


def _rows(host: str, steps: list[int], starts_us: list[float], dur_us: float = 10.0,
          names: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame({"step": steps, "name": names or [str(s) for s in steps],
                         "device": host, "start_ps": [round(s * 1e6) for s in starts_us],
                         "duration_ps": round(dur_us * 1e6)})


def test_steps_common_to_all_hosts_follow_the_chief():
    chief = _rows("a", [5, 6, 7], [0, 10, 20])  # shortest span: the chief
    late = _rows("b", [0, 1, 2, 3], [-10, 0.5, 10.5, 20.5], names=["x", "y", "z", "w"])
    kept = common_steps([chief, late, _rows("c", [], [])])
    by_host = kept.groupby("device")["step"].apply(list).to_dict()
    # b's steps 1..3 overlap a's 5..7; b's step 0 has no partner and is dropped
    assert by_host == {"a": [5, 6, 7], "b": [5, 6, 7]}
    assert kept.loc[kept["device"] == "b", "name"].tolist() == ["5", "6", "7"]


def test_a_host_missing_the_first_steps_narrows_the_intersection():
    a = _rows("a", [0, 1, 2, 3], [0, 10, 20, 30])
    b = _rows("b", [2, 3, 4], [20, 30, 40], dur_us=9.0)
    kept = common_steps([a, b])
    assert sorted(set(kept["step"])) == [2, 3]
    assert len(kept) == 4


def test_hosts_whose_steps_never_overlap_share_no_step():
    a = _rows("a", [0, 1], [0, 10])
    b = _rows("b", [0, 1, 2], [100, 110, 120])
    kept = common_steps([a, b])
    assert sorted(set(kept["step"])) == [0, 1]  # slid by 0 steps: the first two of each
    assert len(common_steps([a, _rows("b", [7], [500])])) == 2


def test_hosts_that_wrote_run_directories_side_by_side_are_one_run(make_logdir, tpu_path):
    # each host named its run by its own capture time, a few seconds apart
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": tpu_path},
                          "2026_01_01_00_00_03": {"b.xplane.pb": tpu_path},
                          "2026_01_01_00_00_04": {"c.xplane.pb": tpu_path},
                          "2026_01_01_01_00_00": {"a.xplane.pb": tpu_path},  # an hour later
                          "2026_01_01_01_00_02": {"a.xplane.pb": tpu_path}})  # the same host
    profile = xw.open_profile(logdir, run="2026_01_01_00_00_00")
    assert profile.hosts == ["a", "b", "c"]
    assert profile.runs["run"].tolist() == ["2026_01_01_00_00_00", "2026_01_01_01_00_00",
                                            "2026_01_01_01_00_02"]


def test_per_host_logdirs_of_one_job_are_one_run(tmp_path, tpu_path):
    for k, host in enumerate(["worker-0", "worker-1"]):
        run_dir = tmp_path / host / "plugins" / "profile" / f"2026_03_01_10_00_0{k}"
        run_dir.mkdir(parents=True)
        (run_dir / f"{host}.xplane.pb").write_bytes(tpu_path.read_bytes())
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["worker-0", "worker-1"]
    assert profile.runs["path"].tolist() == [str(tmp_path)]


def test_a_hosts_busy_row_keeps_every_gap_of_a_pixel(pod16, monkeypatch):
    from xprof_widgets._native.intervals import union_intervals

    from xprof_widgets.pod import busy as busy_module

    monkeypatch.setattr(busy_module, "_MIN_INTERVALS", 4)  # coarse copies even for few gaps
    host = pod16.per_host()[2]
    busy = busy_module.BusyIndex(host)
    assert len(busy.levels) > 2
    t = host.tracks
    ops = t[(t["section_kind"] == "device") & (t["kind"] == "slices")
            & ~t["name"].isin(["Steps", "XLA Modules", "XLA TraceMe", "Framework Ops",
                               "Framework Name Scope", "Source code"])]
    events = np.concatenate([np.arange(a, b) for a, b in zip(ops["first_event"], ops["end_event"],
                                                             strict=True)])
    a, b, _ = union_intervals(host.start_ps[events], host.start_ps[events] +
                              host.duration_ps[events])
    rng = np.random.default_rng(1)
    end = int(host.duration_us * 1e6)
    for _ in range(40):
        span = int(end * 10 ** rng.uniform(-3, 0))
        lo = int(rng.integers(0, end - span + 1))
        width = int(rng.choice([200, 800, 1600]))
        px = span / width
        heads = np.flatnonzero(np.r_[True, a[1:] - b[:-1] >= px])  # every gap < px closed
        tails = np.r_[heads[1:] - 1, len(a) - 1]
        expected = _pixels(a[heads], b[tails], lo, px, width)
        got = _pixels(*busy.query(lo, lo + span, px), lo, px, width)
        assert (got[1:-1] == expected[1:-1]).all()  # the edge pixels may see a sub-pixel gap


def _pixels(a: np.ndarray, b: np.ndarray, lo: int, px: float, width: int) -> np.ndarray:
    """Which pixels of the window some interval overlaps."""
    out = np.zeros(width, bool)
    for s, e in zip(a.tolist(), b.tolist(), strict=True):
        first, last = max(0, int((s - lo) // px)), min(width - 1, int((e - lo) // px))
        if last >= 0 and first < width:
            out[first:last + 1] = True
    return out
