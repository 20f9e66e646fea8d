"""The Input Pipeline on real profiles made by real frameworks (tests/data/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import (
    DEMANDED,
    HIGHLY,
    NOT,
    OTHER_INPUT,
    PREPROCESSING,
    analyze_input_pipeline,
)

DATA = Path(__file__).parents[1] / "data"
STALLED = {3, 7}  # the loader sleeps 40 ms before these batches (tests/data/make/)


@pytest.fixture(scope="module")
def loader_between_steps():
    return analyze_input_pipeline(xw.open_profile(DATA / "jax_loader_between_steps.xplane.pb"))


def test_a_loader_stalling_between_steps_makes_those_steps_input_bound(loader_between_steps):
    steps = loader_between_steps.steps.set_index("step")
    assert steps.index.tolist() == list(range(1, 9))  # XProf's rule: not the first and last
    assert loader_between_steps.left_out_steps["step"].tolist() == [0, 9]
    bound = set(steps.index[steps["input_share"] >= 0.2])
    assert bound == STALLED
    for k in STALLED:  # the 40 ms stall lies before the step's annotation, in its period
        assert steps.loc[k, "input_before_step_us"] > 40_000
        assert steps.loc[k, "input_us"] == pytest.approx(steps.loc[k, "input_before_step_us"])
    assert steps.drop(index=list(STALLED))["input_share"].max() < 0.05
    assert loader_between_steps.verdict != NOT


def test_the_loader_is_named_in_the_input_ops(loader_between_steps):
    ops = loader_between_steps.input_ops
    top = ops.iloc[0]
    assert top["input_op"].endswith(" __next__") and top["input_op"].startswith("$")
    assert top["category"] == OTHER_INPUT  # a plain iterator: no word says it reads files
    assert "__next__" in loader_between_steps.recommendation()


@pytest.mark.parametrize("name, verdict", [("tf_keras_cpu_slow_map", HIGHLY),
                                           ("tf_keras_cpu_fast", NOT)])
def test_keras_fit_over_tf_data_finds_its_twelve_steps_and_xprofs_verdict(name, verdict):
    analysis = analyze_input_pipeline(xw.open_profile(DATA / f"{name}.xplane.pb"))
    # twelve found; XProf's rule counts train 4-13 (the first and last of more than 5 left out)
    assert analysis.steps["name"].tolist() == [f"train {k}" for k in range(4, 14)]
    assert analysis.left_out_steps["name"].tolist() == ["train 3", "train 14"]
    assert analysis.verdict == verdict
    breakdown = analysis.host_breakdown
    assert breakdown.idxmax() == PREPROCESSING and breakdown[DEMANDED] == 0
