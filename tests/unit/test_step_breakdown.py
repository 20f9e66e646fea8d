"""The one step breakdown every tool reads: each instant of a step claimed once, in the order of
CATEGORIES; the marker's own span; XProf's parts as sums; several hosts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.input_events import DEFAULT_INPUT_PATTERN
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.step_breakdown import (
    CATEGORIES,
    COLUMNS,
    NAMES,
    XPROF_PARTS,
    _part,
    step_breakdown,
    xprof_parts,
)

DATA = Path(__file__).parents[1] / "data"
US = 1_000_000


def ev(name, start_us, dur_us, **stats):
    return (name, int(start_us * US), int(dur_us * US), stats)


def host_run() -> bytes:
    """A CPU host: `train` steps of 100 us every 150 us; in each, dispatch 0-10, compiling 5-20
    (a thread of its own), an XLA op 30-70 on a worker; a loader's `__next__` 20 us before
    every step but the first."""
    python, xla, compiler = [], [], []
    for k in range(3):
        t = 150 * k
        python += [ev("train", t, 100, _r=1, step_num=k), ev("PjitFunction(step)", t, 10)]
        if k:
            python.append(ev("$loop.py:3 __next__", t - 20, 10))
        compiler.append(ev("XlaCompile", t + 5, 15))
        xla.append(ev("fusion", t + 30, 40, hlo_op="fusion"))
    python.sort(key=lambda e: (e[1], -e[2]))
    return build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "python", "events": python}, {"name": "tf_XLAEigen/1", "events": xla},
        {"name": "tf_compile", "events": compiler}]}])


def test_each_instant_once_over_the_period_and_the_marker(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(host_run())
    profile = xw.open_profile(path)
    period = step_breakdown(profile)
    marker = step_breakdown(profile, within="marker")
    assert period["step"].tolist() == marker["step"].tolist() == [0, 1, 2]
    assert np.allclose(period[list(COLUMNS)].sum(axis=1), period["duration_us"])
    assert np.allclose(marker[list(COLUMNS)].sum(axis=1), marker["duration_us"])
    row = period.iloc[1]  # the period 100-250: 50 us before the marker at 150
    assert row["before_step_us"] == pytest.approx(50) and row["duration_us"] == pytest.approx(150)
    assert row["input_us"] == pytest.approx(10)  # the loader's __next__, before the marker
    assert row["compile_us"] == pytest.approx(15)  # 155-170: before host compute, in order
    assert row["host_compute_us"] == pytest.approx(5 + 40)  # the dispatch left, the XLA op
    assert row["other_us"] == pytest.approx(150 - 10 - 15 - 45)
    inside = marker.iloc[1]
    assert inside["before_step_us"] == 0 and inside["duration_us"] == pytest.approx(100)
    assert inside["input_us"] == 0 and inside["start_us"] == pytest.approx(150)
    assert inside["other_us"] == pytest.approx(100 - 15 - 45)
    # The Input Pipeline's steps are this breakdown's, folded to one row per step.
    steps = analyze_input_pipeline(profile).steps
    for column in COLUMNS:
        assert np.allclose(steps[column], period[column])
    with pytest.raises(ValueError, match="period"):
        step_breakdown(profile, within="step")


def test_xprofs_parts_are_sums_of_ours():
    assert [c for c, _ in CATEGORIES] == list(COLUMNS) and len(set(NAMES.values())) == len(NAMES)
    claimed = [c for columns in XPROF_PARTS.values() for c in columns]
    assert sorted(claimed) == sorted(COLUMNS)  # every category in exactly one of XProf's parts
    rows = step_breakdown(xw.open_profile(DATA / "synthetic_tpu.xplane.pb"))
    parts = xprof_parts(rows)
    assert list(parts.columns) == list(XPROF_PARTS)
    assert np.allclose(parts.sum(axis=1), rows["duration_us"])
    assert np.allclose(parts["Input"], rows["host_to_device_us"] + rows["input_us"])
    assert rows["unit"].nunique() == 4 and rows["collectives_us"].gt(0).any()


def test_several_hosts_keep_their_steps_and_units(tmp_path, make_logdir):
    logdir = make_logdir({"run": {"a.xplane.pb": host_run(), "b.xplane.pb": host_run()}})
    rows = step_breakdown(xw.open_profile(logdir))
    assert rows["host"].tolist() == ["a", "b"] * 3 and rows["unit"].eq("/host:CPU").all()
    assert np.allclose(rows[list(COLUMNS)].sum(axis=1), rows["duration_us"])


@pytest.mark.parametrize("name", ["tf_keras_cpu_slow_map.xplane.pb", "jax_cpu_demo.xplane.pb",
                                  "synthetic_gpu.xplane.pb"])
def test_fixtures_add_up(name):
    rows = step_breakdown(xw.open_profile(DATA / name))
    assert len(rows) and (rows[list(COLUMNS)] >= 0).all().all()
    assert np.allclose(rows[list(COLUMNS)].sum(axis=1), rows["duration_us"])


@pytest.mark.parametrize("name", ["synthetic_tpu.xplane.pb", "synthetic_gpu.xplane.pb",
                                  "tf_keras_cpu_fast.xplane.pb"])
def test_units_on_threads_break_down_as_on_one(name, monkeypatch):
    """Each unit's sweep runs on a worker thread; the rows come back in unit order."""
    profile = xw.open_profile(DATA / name)
    monkeypatch.setattr("xprof_widgets.profile.threads.THREADED_FROM", 0)  # small files too
    made = []
    for threads in (1, 3):
        monkeypatch.setenv("XPROF_WIDGETS_THREADS", str(threads))
        made.append(_part(profile, DEFAULT_INPUT_PATTERN).rows)
    assert made[0]["device"].nunique() > (1 if "tpu" in name else 0)
    pd.testing.assert_frame_equal(made[1], made[0], check_exact=True)
