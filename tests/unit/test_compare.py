"""Comparing two runs: the real pairs in tests/data/compare/ show the difference each was made
with (tests/data/make/compare_pairs.py), and op matching survives XLA's renumbering."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.compare import (
    OP_COLUMNS,
    Comparison,
    match_ops,
    normalize_hlo,
    structure_hlo,
)

DATA = Path(__file__).resolve().parents[1] / "data"
PAIRS = DATA / "compare"


def compare(before: str, after: str, **kwargs) -> Comparison:
    return Comparison(xw.open_profile(PAIRS / f"{before}.xplane.pb"),
                      xw.open_profile(PAIRS / f"{after}.xplane.pb"), **kwargs)


@pytest.fixture(scope="module")
def loader() -> Comparison:
    return compare("loader_slow", "loader_fast")


@pytest.fixture(scope="module")
def batch() -> Comparison:
    return compare("batch_small", "batch_large")


@pytest.fixture(scope="module")
def fusion() -> Comparison:
    return compare("loader_fast", "unfused")


def test_a_faster_loader_makes_every_step_faster_by_its_input_time(loader):
    steps = loader.steps()
    assert len(steps) == 6 and set(steps["status"]) == {"faster"}
    # The loader slept 30 ms vs 2 ms: the input wait fell by ~28 ms a step, compute stayed put.
    assert (steps["input_before_us"] - steps["input_after_us"]).between(25_000, 31_000).all()
    breakdown = loader.step_breakdown().set_index("part")
    assert breakdown.loc["input wait", "change_ms"] == pytest.approx(-28, abs=3)
    assert breakdown.loc["step time", "change_ms"] < -20
    assert abs(breakdown.loc["compute", "change_ms"]) < 10
    summary = loader.summary()
    assert summary.startswith("Step time ")
    assert "-> " in summary and "input wait -2" in summary
    # Same program, same ops: every op of one run is matched by name in the other.
    ops = loader.ops()
    assert not set(ops["status"]) & {"added", "removed"}
    assert (ops["matched_by"] == "name").all()


def test_a_larger_batch_makes_the_ops_slower_and_the_peak_bigger(batch):
    ops = batch.ops()
    assert list(ops.columns) == OP_COLUMNS
    dots = ops[ops["name"].isin(["dot", "dot.1"])].set_index("name")
    assert set(dots["status"]) == {"slower"}
    assert (dots["time_after_us"] > 2 * dots["time_before_us"]).all()  # 4x the rows
    matched = ops[ops["status"].isin(["slower", "faster", "unchanged"])]
    assert (matched["status"] == "slower").mean() > 0.7
    # ops are sorted by the size of their change
    assert ops["change_us"].abs().is_monotonic_decreasing
    steps = batch.steps()
    assert set(steps["status"]) == {"slower"}
    memory = batch.memory().set_index(["module", "memory_space"])
    step = memory.loc[("jit_step", "HBM")]
    assert step["status"] == "grew" and step["peak_after_mib"] > 2 * step["peak_before_mib"]
    assert batch.default_module == "jit_step"
    grown = batch.buffers()
    assert grown["status"].iloc[0] == "grew" and grown["change_mib"].iloc[0] > 0
    assert "Peak memory of jit_step (HBM)" in batch.summary()


def test_a_larger_batch_matches_renumbered_fusions_by_their_operands(batch):
    """At batch 512 XLA numbers the fusions differently: ynn_fusion.3 (x @ w1) became
    ynn_fusion.5, and ynn_fusion.2 (h @ w2) became ynn_fusion.3."""
    ops = batch.ops().set_index("name")
    renamed = ops[ops["matched_by"] == "fingerprint"]
    assert renamed["name_after"].to_dict() == {"ynn_fusion.3": "ynn_fusion.5",
                                              "ynn_fusion.2": "ynn_fusion.3"}


def test_the_fused_pair_shows_the_ops_that_moved_out_of_the_step(fusion):
    ops = fusion.ops()
    removed = ops[ops["status"] == "removed"]
    added = ops[ops["status"] == "added"]
    # The feature fusion left jit_step; its ops came back as programs of their own.
    assert removed[["program", "name"]].values.tolist() == [["jit_step",
                                                             "multiply_multiply_fusion"]]
    assert set(added["program"]) == {"jit_scale", "jit_shift", "jit_gelu"}
    assert len(added) == 3
    by_program = fusion.ops(by="program").set_index("name")
    assert by_program.loc["jit_scale", "status"] == "added"
    assert by_program.loc["jit_step", "status"] != "added"
    assert "3 added, 1 removed" in fusion.summary()


def test_groupings_sum_the_op_rows(batch):
    ops = batch.ops()
    by_category = batch.ops(by="category").set_index("name")
    for category, part in ops.groupby("category"):
        assert by_category.loc[category, "time_after_us"] == pytest.approx(
            part["time_after_us"].sum())
    with pytest.raises(ValueError, match="by must be one of"):
        batch.ops(by="kernel")


def test_per_step_times_divide_by_each_runs_steps(loader):
    totals = loader.ops().set_index("name")["time_after_us"]
    per_step = loader.ops(per_step=True).set_index("name")["time_after_us"]
    assert per_step["dot"] == pytest.approx(totals["dot"] / 6)


def test_a_profile_compared_with_itself_is_unchanged():
    profile = xw.open_profile(PAIRS / "batch_small.xplane.pb")
    same = Comparison(profile, profile)
    assert set(same.ops()["status"]) == {"unchanged"}
    assert set(same.steps()["status"]) == {"unchanged"}
    assert set(same.memory()["status"]) == {"unchanged"}
    assert "Ops: all" in same.summary() and "unchanged at" in same.summary()
    assert same.step_offset_us(2) == 0


def test_comparing_with_a_profile_without_steps_says_so():
    tpu = xw.open_profile(DATA / "tpu_v6e_inference.xplane.pb")
    other = Comparison(xw.open_profile(PAIRS / "batch_small.xplane.pb"), tpu)
    with pytest.raises(xw.ProfileError, match=r"tpu_v6e_inference.* \(after\) has no steps"):
        other.steps()
    assert "has no steps" in other.summary()
    assert len(other.ops()) > 0  # the ops compare all the same (all added / removed here)


def test_the_threshold_decides_what_is_unchanged(loader):
    loose = compare("loader_slow", "loader_fast", threshold=0.9)
    assert (loose.ops()["status"] == "unchanged").mean() > (loader.ops()["status"]
                                                            == "unchanged").mean()
    with pytest.raises(ValueError, match="threshold"):
        compare("loader_slow", "loader_fast", threshold=2)


def test_fingerprints_drop_names_and_the_structure_drops_sizes():
    a = ("%fusion.12 = f32[8,128]{1,0} fusion(f32[8,128]{1,0} %param.3, f32[] %constant.7), "
         "kind=kLoop, calls=%fused_computation.4, metadata={op_name=\"jit(f)/add\" "
         "source_file=\"a.py\" source_line=3}")
    b = a.replace("fusion.12", "fusion.14").replace("param.3", "param.1").replace("a.py", "b.py")
    assert normalize_hlo(a) == normalize_hlo(b)
    assert "metadata" not in normalize_hlo(a) and "%param" not in normalize_hlo(a)
    assert structure_hlo(a) == structure_hlo(a.replace("8,128", "32,128"))
    assert "%param," in structure_hlo(a)  # operands keep their name, not their number


def test_renumbered_ops_pair_by_fingerprint_before_name():
    def table(rows):
        return pd.DataFrame(rows, columns=["program", "name", "strict", "structural"])

    before = table([("p", "fusion.12", "A", "a"), ("p", "fusion.14", "B", "b"),
                    ("p", "copy", "", ""), ("p", "gone", "G", "g")])
    after = table([("p", "fusion.12", "B", "b"), ("p", "fusion.14", "A", "a"),
                   ("p", "copy", "", ""), ("q", "gone", "G", "g")])
    pairs = {(before["name"][i] if i >= 0 else None, after["name"][j] if j >= 0 else None, how)
             for i, j, how in match_ops(before, after)}
    assert pairs == {("fusion.12", "fusion.14", "fingerprint"),
                     ("fusion.14", "fusion.12", "fingerprint"),
                     ("copy", "copy", "name"),  # no HLO on either side: by name
                     ("gone", None, ""), (None, "gone", "")}  # other program: not the same op


def test_gpu_kernels_compare_by_name_and_op():
    gpu = xw.open_profile(DATA / "synthetic_gpu.xplane.pb")
    same = Comparison(gpu, gpu).kernels()
    assert len(same) > 10 and set(same["status"]) == {"unchanged"}
    assert (same["time_before_us"] == same["time_after_us"]).all()
    gone = Comparison(gpu, xw.open_profile(PAIRS / "batch_small.xplane.pb")).kernels()
    assert set(gone["status"]) == {"removed"} and gone["change_us"].lt(0).all()
    assert Comparison(*[xw.open_profile(PAIRS / "batch_small.xplane.pb")] * 2).kernels().empty
