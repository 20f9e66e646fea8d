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
import numpy as np
import pytest
import xprof_oracle
from grouping import worker_only_us

import xprof_widgets as xw
from xprof_widgets.analysis.pod_viewer import PARTS, analyze_pod_viewer
from xprof_widgets.analysis.step_breakdown import XPROF_PARTS, step_breakdown, xprof_parts

pytest.importorskip("xprof.convert.raw_to_tool_data")

NOTHING = r"(?!)"  # tf.data's waits only, as XProf (see test_input_pipeline_parity.py)
US = 0.5e-3 + 1e-9
"""Half of XProf's last printed digit (it prints microseconds with 3 decimals; our times are
whole nanoseconds, so they round to XProf's exactly), plus the float rounding of ps to us."""


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    doc = xprof_oracle.run(request.param, "pod_viewer")
    profile = xw.open_profile(request.param)
    records = [(m["stepNum"], core) for m in doc["podStatsSequence"]["podStatsMap"]
               for core in m["podStatsPerCore"].values()]
    return (request.param.name, doc, records, analyze_pod_viewer(profile, NOTHING).rows,
            step_breakdown(profile, NOTHING, within="marker"))


def test_xprofs_names_of_the_parts(case):
    _, doc, records, _, _ = case
    names = [e["name"] for e in doc.get("stepBreakdownEvents", [])]
    if not names and records:
        pytest.fail("XProf's records without its part names")
    if not names:
        pytest.skip("XProf names no part where it breaks no step down")
    assert sorted(names) == sorted(XPROF_PARTS)


def test_rows_are_the_step_breakdown(case):
    """One breakdown: the Pod Viewer's rows are the step breakdown's, over each step's period."""
    name, _, _, rows, _ = case
    path = next(p for p in fixture_files.XSPACE if p.name == name)
    period = step_breakdown(xw.open_profile(path), NOTHING)
    assert len(rows) == len(period)
    for part in PARTS:
        assert np.array_equal(rows[part].to_numpy(), period[part].to_numpy())
    if len(rows):
        expected = xprof_parts(rows).idxmax(axis=1)
        assert rows["bottleneck"].tolist() == expected.tolist()


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


def test_every_part_of_every_step(case):
    """XProf's parts of each step and core, inside the step's marker, and its bottleneck. Rules
    (docs/from_xprof.md): JAX's `DevicePut` is our host to device (Input), XProf's host compute;
    a CPU run's worker XLA ops are our host compute, XProf's all others (grouping.py) but where
    its grouping adds other threads' work to a step (xprof_oracle.ADDS_HOST_COMPUTE); on a GPU host see assert_one_gpu_per_step."""
    name, doc, records, rows, marker = case
    if not records:
        assert_xprof_breaks_nothing_down(name, doc, rows)
        return
    if on_gpus(rows):
        assert_one_gpu_per_step(records, rows)
        return
    assert len(records) == len(marker) == len(rows)  # one host, one unit: a row per step
    assert [n for n, _ in records] == list(range(len(rows)))  # XProf counts its step groups
    names = {str(e["id"]): e["name"] for e in doc["stepBreakdownEvents"]}
    ours = xprof_parts(marker)
    if name.startswith("jax"):  # DevicePut: XProf computes
        ours["Input"] -= marker["host_to_device_us"]
        ours["Host compute"] += marker["host_to_device_us"]
    path = next(p for p in fixture_files.XSPACE if p.name == name)
    worker = marker["step"].map(worker_only_us(xw.open_profile(path), NOTHING)).fillna(0.0)
    added = marker["step"].map(xprof_oracle.ADDS_HOST_COMPUTE.get(name, {})).fillna(0.0)
    ours["Host compute"] += added - worker
    ours["All others"] -= added - worker
    for k, (_, theirs) in enumerate(records):
        assert abs(marker["duration_us"].iat[k] - theirs["totalDurationUs"]) < US
        assert rows["step"].iat[k] == marker["step"].iat[k]
        for key, part in names.items():
            assert abs(ours[part].iat[k] - theirs["stepBreakdownUs"].get(key, 0.0)) < US, part
        if not added.iat[k]:  # where XProf adds, its largest part may differ
            assert ours.iloc[k].idxmax() == theirs["bottleneck"]
    assert set(xprof_oracle.ADDS_HOST_COMPUTE.get(name, {})) <= set(rows["step"])


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
        assert abs(parts.get("1", 0.0) + parts.get("9", 0.0)
                   - sum(longest[c] for c in PARTS)) < US
        assert parts.get("6", 0.0) == parts.get("4", 0.0) == 0
        assert longest["bottleneck"] == theirs["bottleneck"]
