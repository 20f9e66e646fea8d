"""The pod viewer against XProf's `pod_viewer` on every XSpace fixture.

XProf has records (one per step and core) on the CPU-only fixtures: equal there are the steps
(XProf numbers them from 0: its step groups; ours are the steps' numbers, in the same order),
each step's time, its input time, and on TensorFlow runs the bottleneck. Differences we chose
(docs/from_xprof.md, "Pod Viewer") are asserted as rules:

- a host-marked step's period starts where the step before it ended (the Input Pipeline's
  rule): our time less `before_step_us` is XProf's, our input less the input before the marker
  is XProf's, the time before the marker that is not input is ours as "other";
- JAX's `DevicePut` is input (host-to-device) for us, nothing for XProf;
- host compute: ours is the work on the thread that runs the steps; XProf's step grouping, which
  follows work across threads, adds other threads' work to three steps of the slow-map
  TensorFlow run (`XPROF_ADDS_HOST_COMPUTE`: steps 6, 8 and 11, by 68.663, 278.670 and 316.240
  us), where our "other" is larger by as much; on every other TensorFlow step the two are equal,
  and host compute + other are XProf's host compute + all others; on JAX CPU runs the XLA ops are our
  device compute (XProf: host compute, or all others where its grouping misses them), so the
  bottleneck differs there;
- XProf finds no step on the synthetic GPU profiles and no core on the synthetic TPU one (its
  steps have no core details); we break every core down under the steps;
- on a GPU host whose steps XProf finds (the TensorFlow GPU demo) it keeps one record per step,
  the longest GPU's; we keep a row per GPU (`assert_one_gpu_per_step`).
"""

from __future__ import annotations

import fixture_files
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.pod_viewer import XPROF_NAMES, analyze_pod_viewer

pytest.importorskip("xprof.convert.raw_to_tool_data")

NOTHING = r"(?!)"  # tf.data's waits only, as XProf (see test_input_pipeline_parity.py)
US = 0.5e-3 + 1e-9
"""Half of XProf's last printed digit (it prints microseconds with 3 decimals; our times are
whole nanoseconds, so they round to XProf's exactly), plus the float rounding of ps to us."""
XPROF_PART = {"compute_us": "1", "device_to_device_us": "2", "collectives_us": "3",
              "host_compute_us": "4", "input_us": "6", "output_us": "7", "compile_us": "8",
              "other_us": "9"}
"""XProf's step-breakdown ids (5 is kernel launch, which we do not measure)."""


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    doc = xprof_oracle.run(request.param, "pod_viewer")
    profile = xw.open_profile(request.param)
    records = [(m["stepNum"], core) for m in doc["podStatsSequence"]["podStatsMap"]
               for core in m["podStatsPerCore"].values()]
    return (request.param.name, doc, records, analyze_pod_viewer(profile, NOTHING).rows,
            analyze_input_pipeline(profile, NOTHING).steps)


def test_xprofs_names_of_the_parts(case):
    _, doc, records, _, _ = case
    names = {str(e["id"]): e["name"] for e in doc.get("stepBreakdownEvents", [])}
    if not names and records:
        pytest.fail("XProf's records without its part names")
    for column, key in XPROF_PART.items():
        if names:
            assert names[key] == XPROF_NAMES[column]


def assert_xprof_breaks_nothing_down(name: str, doc: dict, rows) -> None:
    """Rule: XProf finds no step on the synthetic GPU profiles and no core in the synthetic TPU
    one's steps (they lack core details); we break every core down under every step. The TPU
    inference run marks no step: neither XProf nor we have a row."""
    steps_by_xprof = doc["podStatsSequence"]["podStatsMap"]
    assert not any(m["podStatsPerCore"] for m in steps_by_xprof)
    if name == "tpu_v6e_inference.xplane.pb":
        assert rows.empty and not steps_by_xprof
        return
    if name.startswith("synthetic_tpu"):
        assert rows["step"].nunique() == len(steps_by_xprof) > 0
    else:
        assert name.startswith("synthetic_gpu") and not steps_by_xprof
    assert len(rows) == rows["step"].nunique() * rows["core"].nunique() > 0


def test_steps_times_and_input(case):
    name, doc, records, rows, steps = case
    if not records:
        assert_xprof_breaks_nothing_down(name, doc, rows)
        return
    if on_gpus(rows):
        assert_one_gpu_per_step(records, rows)
        return
    assert len(rows) == len(records) == len(steps)  # one host, one unit: a row per step
    assert [n for n, _ in records] == list(range(len(rows)))  # XProf counts its step groups
    for (_, theirs), (_, ours), (_, step) in zip(records, rows.iterrows(), steps.iterrows(),
                                                strict=True):
        parts = theirs["stepBreakdownUs"]
        assert ours["step"] == step["step"]
        assert abs(ours["duration_us"] - ours["before_step_us"] - theirs["totalDurationUs"]) < US
        devput = step["host_to_device_us"] if name.startswith("jax") else 0.0
        ours_input = ours["input_us"] - step["input_before_step_us"] - devput
        assert abs(ours_input - parts["6"]) < US
        assert parts["1"] == parts["2"] == parts["3"] == parts["7"] == parts["8"] == 0


def on_gpus(rows) -> bool:
    return bool(rows["core"].astype(str).str.startswith("/device:GPU:").any())


def assert_one_gpu_per_step(records: list, rows) -> None:
    """Rule: on a GPU host XProf keeps one record per step, that of the GPU whose step is the
    longest (on the TensorFlow GPU demo GPU 6, of GPUs 4 and 6); we give every GPU its row. The
    copies TensorFlow's 2020 tracer named MemcpyH2D / MemcpyD2H XProf counts as compute or
    other (it knows MemcpyHToD names only): its compute + other are all of our parts."""
    steps = sorted(rows["step"].unique())
    assert [n for n, _ in records] == list(range(len(steps)))  # XProf counts its step groups
    for (_, theirs), step in zip(records, steps, strict=True):
        mine = rows[rows["step"] == step]
        longest = mine.loc[mine["duration_us"].idxmax()]
        parts = theirs["stepBreakdownUs"]
        assert abs(longest["duration_us"] - theirs["totalDurationUs"]) < US
        ours = sum(longest[c] for c in ("compute_us", "input_us", "output_us", "other_us"))
        assert abs(parts["1"] + parts["9"] - ours) < US
        assert parts["6"] == parts["4"] == 0 and longest["bottleneck"] == theirs["bottleneck"]


def test_host_compute_and_bottleneck(case):
    name, doc, records, rows, steps = case
    if not records:  # no host compute or bottleneck of XProf's to compare with
        assert_xprof_breaks_nothing_down(name, doc, rows)
        return
    if on_gpus(rows):  # the bottleneck: see assert_one_gpu_per_step
        assert all(theirs["stepBreakdownUs"]["4"] == 0 for _, theirs in records)
        assert (rows["host_compute_us"] == 0).all()
        return
    added = xprof_oracle.ADDS_HOST_COMPUTE.get(name, {})
    for (_, theirs), (_, ours), (_, step) in zip(records, rows.iterrows(), steps.iterrows(),
                                                strict=True):
        parts = theirs["stepBreakdownUs"]
        before_not_input = ours["before_step_us"] - step["input_before_step_us"]
        busy = ours["compute_us"] + ours["host_compute_us"] + ours["other_us"] - before_not_input
        if name.startswith("jax"):  # DevicePut is our input, XProf's host time
            busy += step["host_to_device_us"]
        assert abs(busy - parts["4"] - parts["9"]) < US
        if name.startswith("tf"):
            assert ours["compute_us"] == 0  # no XLA op on a TensorFlow CPU run
            assert abs(ours["host_compute_us"] + added.get(ours["step"], 0.0) - parts["4"]) < US
            assert ours["bottleneck"] == theirs["bottleneck"]
        else:  # the XLA ops are device compute for us
            assert ours["compute_us"] > 0
            expected = max(XPROF_PART, key=lambda c: ours[c])
            assert ours["bottleneck"] == XPROF_NAMES[expected]
    assert set(added) <= set(rows["step"])
