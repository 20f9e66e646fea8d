"""The Input Pipeline against XProf's `input_pipeline_analyzer` on every XSpace fixture.

Compared step by step: which steps, their names and step times, the input time inside each
step, every part of XProf's step-time graph (from the step breakdown all tools read), the
verdict's percentage, and the host input-op table. Differences we chose
(docs/from_xprof.md, "Input Pipeline") are asserted as rules:

- Which steps count is XProf's rule (steps.ill_formed, steps.edge_steps), so the steps are XProf's, and
  `left_out_steps` names the ones it drops; checked live on fixtures and on small built
  profiles at the rule's edges (5 and 6 steps, a step without compute).
- A host-marked step's period starts where the step before it ended (the wait for its batch);
  XProf's step time is the marker's own span. We compare XProf with the marker's span.
- We count user code that does input (annotations and Python-tracer frames named like
  `load_batch`, a loader's `__next__`) as input time; XProf counts tf.data's waits only. With an
  input pattern that matches nothing we must equal XProf exactly.
- JAX's `DevicePut` (a batch copied to the device) is host-to-device time, listed as Enqueue;
  XProf knows TensorFlow's InfeedEnqueue and MemcpyHToD only.
- XProf says POTENTIALLY input-bound when much of a host-only step is unaccounted for ("All
  Others"); we give no such verdict, and measure the same (zero) input time.
- Copies named `MemcpyH2D` (TensorFlow's 2020 CUPTI tracer) are host-to-device time here; XProf
  knows `MemcpyHToD` only and counts them as device compute.
- XProf finds no steps on a GPU profile whose device events carry no step groups; we measure
  the devices under the host's step markers.
- Host compute is the work on the thread that runs the steps, inside the markers, and on a CPU
  run the XLA ops of the host's threads; XProf counts the stepping thread's work, and adds other
  threads' work to some steps through its grouping (grouping.py, xprof_oracle.ADDS_HOST_COMPUTE).
- XProf's TensorCore compute of a TPU step is within 0.5% of ours (TPU_COMPUTE_RTOL).
"""

from __future__ import annotations

import sys
from pathlib import Path

import fixture_files
import numpy as np
import pandas as pd
import pytest
import xprof_oracle
from grouping import worker_only_us

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.step_breakdown import COLUMNS, step_breakdown, xprof_parts
from xprof_widgets.analysis.steps import SOURCES

pytest.importorskip("xprof.convert.raw_to_tool_data")

NOTHING = r"(?!)"
"""An input pattern no name matches: only tf.data waits, infeed and transfers are input."""
XPROF_DIGITS_MS = 6  # XProf writes milliseconds with 6 decimals
HALF_LAST_DIGIT_MS = 0.5 * 10**-XPROF_DIGITS_MS
NO_STEPS_BY_XPROF = {"synthetic_gpu.xplane.pb", "synthetic_gpu_allocator.xplane.pb",
                     "tpu_v6e_inference.xplane.pb"}
NO_STEPS_AT_ALL = {"tpu_v6e_inference.xplane.pb"}
JAX_ENQUEUE = ["DevicePut"]
OLD_MEMCPY_NAMES = {"34.83.195.179_6003.xplane.pb"}
"""Profiles whose copies are named `MemcpyH2D` (XProf's 2020 TensorFlow GPU demo)."""


def table(block: dict) -> pd.DataFrame:
    columns = [c["id"] for c in block["cols"]]
    return pd.DataFrame([[cell.get("v") for cell in row["c"]] for row in block["rows"]],
                        columns=columns)


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    doc = xprof_oracle.run(request.param, "input_pipeline_analyzer")
    profile = xw.open_profile(request.param)
    return (request.param.name, doc, analyze_input_pipeline(profile),
            analyze_input_pipeline(profile, input_pattern=NOTHING))


def shared_steps(analysis, xprof_steps: pd.DataFrame) -> pd.DataFrame:
    """Our steps: XProf's rule for which steps count is ours, so they are its steps."""
    return analysis.steps.reset_index(drop=True)


def test_steps_and_step_times(case):
    name, doc, ours, _ = case
    theirs = table(doc[1])
    if name in NO_STEPS_BY_XPROF:
        assert_no_steps_by_xprof(name, doc, ours)
        return
    steps = shared_steps(ours, theirs)
    assert len(steps) == len(theirs)
    if ours.step_markers.source != SOURCES[0]:  # XProf renumbers device steps by its groups
        assert steps["name"].tolist() == theirs["stepnum"].astype(str).tolist()
    marker_ms = (steps["duration_us"] - steps["before_step_us"]) / 1000
    assert np.abs(marker_ms.to_numpy() - xprof_step_ms(theirs)).max() <= HALF_LAST_DIGIT_MS


def assert_no_steps_by_xprof(name: str, doc: list, ours) -> None:
    """XProf measures no step (its step table is empty and it says so). Where there is no step
    marker at all (the TPU inference run) neither do we, and we say why; rule: on the synthetic
    GPU profiles (device events without step groups) we measure the devices under the host's
    step markers, a row per step, each with its input time, and give a verdict."""
    assert table(doc[1]).empty
    assert doc[1]["p"]["input_conclusion"].startswith("No step time measured.")
    if name in NO_STEPS_AT_ALL:
        assert ours.steps.empty and ours.verdict is None
        assert ours.no_steps_message().startswith("No training steps found.")
    else:
        assert len(ours.steps) > 0 and ours.no_steps_message() == ""
        assert (ours.steps["input_us"] >= 0).all() and ours.verdict is not None


def xprof_step_ms(theirs: pd.DataFrame) -> np.ndarray:
    """XProf's step times: a column of its own, or on TPU the TensorCore's parts together."""
    if "stepTimeMs" in theirs:
        return theirs["stepTimeMs"].to_numpy(float)
    parts = ["tcComputeTimeMs", "tcInfeedTimeMs", "tcOutfeedTimeMs", "tcIdleTimeMs"]
    return theirs[parts].astype(float).sum(axis=1).to_numpy()


def test_input_time_inside_each_step(case):
    name, doc, _, tf_data_only = case
    theirs = table(doc[1])
    if name in NO_STEPS_BY_XPROF:  # no step, so no input time, in XProf
        assert_no_steps_by_xprof(name, doc, tf_data_only)
        return
    steps = shared_steps(tf_data_only, theirs)
    xprof_input = theirs["infeedTimeMs"] if "infeedTimeMs" in theirs else theirs["tcInfeedTimeMs"]
    ours = (steps["input_us"] - steps["input_before_step_us"]) / 1000
    assert np.abs(ours.to_numpy() - xprof_input.to_numpy(float)).max() <= HALF_LAST_DIGIT_MS


XPROF_GRAPH = {"Device compute": "deviceComputeTimeMs", "Device to device": "deviceToDeviceTimeMs",
               "Device collective communication": "deviceCollectivesTimeMs",
               "Host compute": "hostComputeTimeMs", "Kernel launch": "kernelLaunchTimeMs",
               "Input": "infeedTimeMs", "Output": "outfeedTimeMs", "Compilation": "compileTimeMs",
               "All others": "otherTimeMs"}
"""XProf's step-time graph: each of its parts (step_breakdown.XPROF_PARTS) and its column."""


def test_step_time_graph_per_category(case):
    """Every part of XProf's step-time graph, step by step, from the one step breakdown every
    tool reads (step_breakdown.py), inside each step's marker as XProf measures it. Rules:
    JAX's `DevicePut` is our host-to-device time and XProf's host compute; a CPU run's XLA
    ops on worker threads are our host compute, XProf's "All others" (grouping.worker_only_us)
    but where its step grouping adds other threads' work to a step (xprof_oracle
    ADDS_HOST_COMPUTE); on the 2020 GPU demo XProf counts the
    `MemcpyH2D` / `MemcpyD2H` copies as device compute or all others (OLD_MEMCPY_NAMES). TPU
    steps: XProf's TensorCore breakdown is another table (test_tpu_step_parts)."""
    name, doc, _, tf_data_only = case
    theirs = table(doc[1])
    if name in NO_STEPS_BY_XPROF:
        assert_no_steps_by_xprof(name, doc, tf_data_only)
        return
    if "stepTimeMs" not in theirs:
        pytest.skip("TPU steps: XProf's TensorCore breakdown, compared in test_tpu_step_parts")
    path = next(p for p in fixture_files.XSPACE if p.name == name)
    rows = per_step(step_breakdown(xw.open_profile(path), NOTHING, within="marker"))
    # The breakdown keeps a long run's ends (XProf's Pod Viewer does); the Input Pipeline not.
    rows = rows[rows["step"].isin(tf_data_only.steps["step"])].reset_index(drop=True)
    assert rows["step"].tolist() == shared_steps(tf_data_only, theirs)["step"].tolist()
    ours = xprof_parts(rows) / 1000
    if tf_data_only.input_ops["input_op"].isin(JAX_ENQUEUE).any():  # DevicePut: XProf computes
        moved = rows["host_to_device_us"] / 1000
        ours["Input"] -= moved
        ours["Host compute"] += moved
    # XProf's grouping: worker threads' XLA ops out, then what it ties to listed steps in.
    added = (rows["step"].map(xprof_oracle.ADDS_HOST_COMPUTE.get(name, {})).fillna(0.0)
             - rows["step"].map(worker_only_us(xw.open_profile(path), NOTHING)).fillna(0.0))
    ours["Host compute"] += added / 1000
    ours["All others"] -= added / 1000
    xprof = pd.DataFrame({part: theirs[column].astype(float) for part, column in
                          XPROF_GRAPH.items()})
    if name in OLD_MEMCPY_NAMES:  # our Input and Output are its compute and others
        copies = ["Device compute", "All others", "Input", "Output"]
        assert np.abs(ours[copies].sum(axis=1) - xprof[copies].sum(axis=1)).max() \
            <= 4 * HALF_LAST_DIGIT_MS
        ours, xprof = ours.drop(columns=copies), xprof.drop(columns=copies)
    assert (np.abs(ours - xprof).max() <= HALF_LAST_DIGIT_MS).all(), (ours - xprof).abs().max()


TPU_COMPUTE_RTOL = 0.005
"""Rule: XProf's TensorCore compute of a step is the least over cores of the step time less the
core's idle time, which it takes from the ops' self times by step group; ours is the union of
each core's busy categories inside the step. They differ by under 0.5% (0.35% at most on the
synthetic TPU profile, ours larger)."""


def test_tpu_step_parts(case):
    """XProf's TensorCore breakdown of device-marked TPU steps: infeed and outfeed equal ours,
    compute per TPU_COMPUTE_RTOL, idle the rest of the shortest core's step."""
    name, doc, _, tf_data_only = case
    theirs = table(doc[1])
    if name in NO_STEPS_BY_XPROF:
        assert_no_steps_by_xprof(name, doc, tf_data_only)
        return
    if "tcComputeTimeMs" not in theirs:
        pytest.skip("not TPU steps: test_step_time_graph_per_category compares them")
    path = next(p for p in fixture_files.XSPACE if p.name == name)
    rows = step_breakdown(xw.open_profile(path), NOTHING, within="marker")
    by_step = rows.groupby("step", sort=True)
    busy = (rows["duration_us"] - rows["other_us"] - rows["input_us"] - rows["output_us"])
    compute = busy.groupby(rows["step"]).min().to_numpy() / 1000
    xprof = theirs["tcComputeTimeMs"].astype(float).to_numpy()
    assert len(compute) == len(xprof)
    assert np.allclose(compute, xprof, rtol=TPU_COMPUTE_RTOL, atol=0)
    for ours, column in (("input_us", "tcInfeedTimeMs"), ("output_us", "tcOutfeedTimeMs")):
        assert np.abs(by_step[ours].max().to_numpy() / 1000
                      - theirs[column].astype(float).to_numpy()).max() <= HALF_LAST_DIGIT_MS


def per_step(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per step, the slowest unit's (the Input Pipeline's rule), units tied for
    slowest averaged."""
    slowest = rows[rows["duration_us"] == rows.groupby("step")["duration_us"].transform("max")]
    return slowest.groupby("step", sort=True)[list(COLUMNS)].mean().reset_index()


def test_verdict_percentage(case):
    name, doc, _, tf_data_only = case
    if name in NO_STEPS_BY_XPROF:  # no step, so no percentage, in XProf
        assert_no_steps_by_xprof(name, doc, tf_data_only)
        return
    conclusion = doc[1]["p"].get("input_conclusion", "")
    steps = shared_steps(tf_data_only, table(doc[1]))
    marker_us = steps["duration_us"] - steps["before_step_us"]
    enqueue = tf_data_only.input_ops["input_op"].isin(JAX_ENQUEUE).any()
    h2d = 0 if enqueue else steps["host_to_device_us"]  # XProf has no JAX transfers
    pct = 100 * float((steps["input_us"] - steps["input_before_step_us"] + h2d).sum()
                      / marker_us.sum())
    if "POTENTIALLY" in conclusion:  # XProf's guess about unaccounted host time
        # The input it measured is zero, as ours, but for copies TensorFlow's 2020 tracer named
        # `MemcpyH2D`: XProf knows CUPTI's `MemcpyHToD` only and counts them as device compute.
        waits = steps["input_us"] - steps["input_before_step_us"]
        assert "'All Others'" in conclusion and round(100 * waits.sum() / marker_us.sum(), 1) == 0
        assert enqueue or not h2d.any() or name in OLD_MEMCPY_NAMES
        return
    word = conclusion.split("Your program is ")[1].split(" ")[0]
    assert f"{pct:.1f}% of the total step time" in conclusion
    assert word == ("HIGHLY" if pct >= 20 else "MODERATELY" if pct >= 5 else "NOT")


def test_input_op_table(case):
    name, doc, _, tf_data_only = case
    theirs = table(doc[2]) if len(doc) > 2 else pd.DataFrame()
    ours = tf_data_only.input_ops
    ours = ours[~ours["input_op"].isin(JAX_ENQUEUE)]
    if theirs.empty:
        assert ours.empty or name in NO_STEPS_BY_XPROF, ours
        return
    theirs = theirs.rename(columns={"opName": "input_op"}).set_index("input_op")
    ours = ours.set_index("input_op")
    assert set(ours.index) == set(theirs.index)
    theirs = theirs.loc[ours.index]
    assert ours["count"].tolist() == theirs["count"].astype(int).tolist()
    assert ours["category"].tolist() == theirs["category"].tolist()
    for mine, xprof in (("total_time_ms", "timeInMs"), ("self_time_ms", "selfTimeInMs")):
        assert np.abs(ours[mine] - theirs[xprof].astype(float)).max() <= HALF_LAST_DIGIT_MS
    # XProf's fraction (a double) against our percent / 100: the same ratio, two roundings
    # apart; 1e-15 relative is 4.5 ulps at least
    assert np.allclose(ours["self_time_pct"] / 100, theirs["selfTimeInPercent"].astype(float),
                       rtol=1e-15, atol=0)


def test_left_out_steps_are_those_xprof_drops(case):
    """What XProf drops on a fixture is what `left_out_steps` lists: on host-marked runs of more
    than 5 steps the first and the last (every such fixture's steps all compute); the steps
    kept are XProf's (test_steps_and_step_times), so these are the ones it drops."""
    name, _, ours, _ = case
    left = ours.left_out_steps
    found = set(ours.step_markers.markers["step"].tolist())
    assert found == set(ours.steps["step"].tolist()) | set(left["step"].tolist())
    if ours.step_markers.source == SOURCES[0] or name in NO_STEPS_AT_ALL or ours.steps.empty:
        assert left.empty
        return
    assert len(left) == 2 and left["step"].tolist() == [
        ours.steps["step"].min() - 1, ours.steps["step"].max() + 1]
    assert left["reason"].str.startswith(("first of more than 5 steps",
                                          "last of more than 5 steps")).all()


def built_run(tmp_path, n: int, idle: tuple[int, ...] = ()):
    """A CPU run of `n` host-marked steps, step k lasting 80 + k us (so XProf's step times
    name the steps it kept), each with compute inside but the `idle` ones."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
    from xspace_builder import build_xspace

    us = 1_000_000
    events = []
    for k in range(n):
        events.append(("train", (1000 + 200 * k) * us, (80 + k) * us, {"_r": 1, "step_num": k}))
        if k not in idle:
            events.append(("matmul", (1010 + 200 * k) * us, 30 * us, {}))
    path = tmp_path / f"steps{n}_{'_'.join(map(str, idle))}.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "python", "events": events}]}]))
    return path


@pytest.mark.parametrize(("n", "idle", "kept"), [
    (5, (), [0, 1, 2, 3, 4]),            # 5 steps: XProf keeps both ends
    (6, (), [1, 2, 3, 4]),               # 6: it drops the first and the last
    (6, (2,), [0, 1, 3, 4, 5]),          # a step without compute goes first; 5 remain: ends kept
    (8, (0, 3), [2, 4, 5, 6]),           # 6 remain after the idle ones: their ends go too
])
def test_step_rule_at_its_edges(tmp_path, n, idle, kept):
    path = built_run(tmp_path, n, idle)
    theirs = table(xprof_oracle.run(path, "input_pipeline_analyzer")[1])
    assert np.round(theirs["stepTimeMs"].astype(float) * 1000 - 80).astype(int).tolist() == kept
    ours = analyze_input_pipeline(xw.open_profile(path), NOTHING)
    assert ours.steps["step"].tolist() == kept
    left = ours.left_out_steps.set_index("step")["reason"]
    assert sorted([*kept, *left.index]) == list(range(n))
    assert all(left[k].startswith("no host compute") for k in idle)
    # XProf's Pod Viewer leaves out the steps without compute only, and so does the breakdown
    pod = xprof_oracle.run(path, "pod_viewer")["podStatsSequence"]["podStatsMap"]
    measured = [k for k in range(n) if k not in idle]
    assert [int(step["stepNum"]) for step in pod] == measured
    assert sorted(set(step_breakdown(xw.open_profile(path), NOTHING)["step"])) == measured


@pytest.mark.parametrize("path", fixture_files.JAX_GPU, ids=fixture_files.ids(fixture_files.JAX_GPU))
def test_jax_gpu_runs_have_no_steps_in_either(path):
    """The JAX MI300X xplanes mark no step: XProf measures none, and neither do we (nothing is
    left out either); both say so."""
    doc = xprof_oracle.run(path, "input_pipeline_analyzer")
    ours = analyze_input_pipeline(xw.open_profile(path))
    assert table(doc[1]).empty and doc[1]["p"]["input_conclusion"].startswith("No step time")
    assert ours.steps.empty and ours.left_out_steps.empty
    assert ours.no_steps_message().startswith("No training steps found.")
