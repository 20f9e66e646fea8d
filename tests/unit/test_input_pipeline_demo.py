"""On a fresh run of the demo (real JAX on the CPU), we find the input stalls it injected."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets import demo
from xprof_widgets.analysis.input_pipeline import (
    HIGHLY_PCT,
    MODERATELY_PCT,
    analyze_input_pipeline,
)

pytest.importorskip("jax")


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("demo") / "logdir"
    subprocess.run([sys.executable, "-m", "xprof_widgets.demo", str(logdir)], check=True,
                   capture_output=True)
    return xw.open_profile(logdir)


@pytest.fixture(scope="module")
def analysis(profile):
    return analyze_input_pipeline(profile)


def demo_shares(profile) -> pd.DataFrame:
    """The demo's own definition: input_pipeline's duration over its train step's."""
    steps = profile.events(name=r"^train \d+$")
    inputs = profile.events(name="^input_pipeline$")
    assert len(steps) == len(inputs) == demo.DEFAULT_STEPS
    shares = pd.DataFrame({"step": range(len(steps)),
                           "input_us": inputs["duration_us"].to_numpy(),
                           "duration_us": steps["duration_us"].to_numpy()}).set_index("step")
    return shares.loc[COUNTED]


COUNTED = list(range(1, demo.DEFAULT_STEPS - 1))
"""The demo's steps XProf's rule counts: all but the first and the last (steps.edge_steps)."""


def test_every_step_is_found(analysis):
    assert analysis.step_markers.source == "host step roots"
    assert analysis.steps["step"].tolist() == COUNTED
    assert analysis.steps["name"].tolist() == [f"train {i}" for i in COUNTED]
    assert analysis.left_out_steps["step"].tolist() == [0, demo.DEFAULT_STEPS - 1]


def test_per_step_input_share_matches_the_injected_stalls(analysis, profile):
    steps = analysis.steps.set_index("step")
    # The steps that wait for input longest are those the demo stalled (a fresh run's shares
    # move with the machine's load: test_demo)...
    injected_stalls = [k for k in demo.input_bound_steps(demo.DEFAULT_STEPS) if k in COUNTED]
    ranked = steps["input_share"].sort_values(ascending=False).index.tolist()
    assert sorted(ranked[:len(injected_stalls)]) == injected_stalls, steps["input_share"]
    # ...and each step waits as long as the demo measured (our input_share also counts the
    # step's host-to-device copies, which a busy machine can slow down).
    injected = demo_shares(profile)
    ours = steps["input_us"] / steps["duration_us"]
    expected = injected["input_us"] / injected["duration_us"]
    assert np.allclose(ours, expected, atol=0.02), pd.DataFrame({"ours": ours, "demo": expected})


def test_verdict_follows_from_the_injected_share(analysis, profile):
    injected = demo_shares(profile)
    share = injected["input_us"].sum() / injected["duration_us"].sum()
    waiting = analysis.steps["input_us"].sum() / analysis.steps["duration_us"].sum()
    assert waiting == pytest.approx(share, abs=0.02)
    assert analysis.input_share >= waiting
    expected = ("HIGHLY" if 100 * share >= HIGHLY_PCT else
                "MODERATELY" if 100 * share >= MODERATELY_PCT else "NOT")
    assert analysis.verdict == expected == "HIGHLY"
    assert "load_batch" in analysis.recommendation()


def test_host_side_names_the_demo_input_code(analysis):
    ops = analysis.input_ops.set_index("input_op")
    assert set(demo.INPUT_NAMES) <= set(ops.index)
    n = demo.DEFAULT_STEPS
    assert (ops.loc[list(demo.INPUT_NAMES), "count"] == n).all()
    assert ops.loc["load_batch", "category"] == "Demanded file read"
    assert ops.loc["preprocess_batch", "category"] == "Preprocessing"
    # input_pipeline only wraps the other two: almost no self time.
    assert ops.loc["input_pipeline", "self_time_ms"] < 0.05 * ops.loc["input_pipeline",
                                                                      "total_time_ms"]
    assert np.isclose(ops["self_time_pct"].sum(), 100)
