"""Framework op stats against XProf's `framework_op_stats` on every XSpace fixture, row by row.

Both of XProf's tables (idle included, idle excluded) are compared: every row in XProf's order
(rank), with its side, type, name, occurrences, times, self-time shares and their running
sums, FLOP rates, bandwidth, intensity, bound-by and execution mode. Units differ by design:
our shares are percent (XProf's JSON carries fractions) and our bandwidth is GB/s (XProf's
figure is GiB/s under a "GBytes/Sec" label). Differences we chose (docs/from_xprof.md,
"Framework Op Stats") are asserted as rules:

- On a CPU run XProf has no device rows; we list the XLA ops that ran as device rows, as the
  op profile does. With `xla_cpu_ops=False` the table equals XProf's.
- XProf lists no GPU op when no kernel is grouped into a step (as on our synthetic GPU
  profile) and shows the device as all idle; we list the kernels' framework ops. The host rows
  are equal.
- On a GPU run without XLA ops (TensorFlow's own kernels, XProf's 2020 demo) XProf's device side
  is one IDLE row, the GPU planes' spans added up; we have no device side there.
"""

from __future__ import annotations

import fixture_files
import gviz
import numpy as np
import pandas as pd
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats

pytest.importorskip("xprof.convert.raw_to_tool_data")

REL = 1e-15
"""XProf's JSON doubles against ours: the same inputs (integer picoseconds, counted FLOPs and
bytes) through a few operations in another order, each rounding by half an ulp; 1e-15 is 4.5
ulps at least, and every fixture is within it (1e-9 before: a million times looser)."""
ULP = 2.0**-52
"""A running share (`*_cumulative_*`) is a sum over the rows above, added up in another order
(XProf sums fractions, we percents): after k rows two such sums differ by up to k ulps of the
sum (twice the recursive-summation bound (k-1)u, u = 2**-53, one per side), on top of REL."""
GIB_PER_GB = 1e9 / 2**30
TEXT = [("host_or_device", "host_or_device"), ("type", "type"), ("operation", "operation"),
        ("bound_by", "bound_by"), ("eager", "execution_mode")]
NUMBERS = [  # (XProf's column, ours, ours / XProf's)
    *xprof_oracle.TIME_COLUMNS,
    ("device_total_self_time_percent", "device_total_self_time_pct", 100),
    ("device_cumulative_total_self_time_percent", "device_cumulative_total_self_time_pct", 100),
    ("host_total_self_time_percent", "host_total_self_time_pct", 100),
    ("Host_cumulative_total_self_time_percent", "host_cumulative_total_self_time_pct", 100),
    ("measured_flop_rate", "measured_flop_rate_gflops", 1),
    ("model_flop_rate", "model_flop_rate_gflops", 1),
    ("measured_memory_bw", "measured_memory_bw_gbps", 1 / GIB_PER_GB),
    ("operational_intensity", "operational_intensity", 1),
]


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    tables = xprof_oracle.run(request.param, "framework_op_stats")
    profile = xw.open_profile(request.param)
    return profile, [gviz.frame(t) for t in tables]


COST_MODEL = {"bound_by", "measured_flop_rate", "model_flop_rate", "measured_memory_bw",
              "operational_intensity"}
"""XProf's columns read from its GPU cost model (FLOPs and bytes per HLO op)."""


def assert_same_rows(ours: pd.DataFrame, theirs: pd.DataFrame, skip: set[str] = frozenset()
                     ) -> None:
    """Row by row, every column but XProf's `skip`."""
    assert len(ours) == len(theirs)
    for k, ((_, got), (_, want)) in enumerate(zip(ours.iterrows(), theirs.iterrows(),
                                                  strict=True)):
        where = want["operation"]
        for xprof, mine in TEXT:
            if xprof not in skip:
                assert got[mine] == want[xprof], (where, mine)
        for xprof, mine, scale in NUMBERS:
            if xprof in skip:
                continue
            expected = float(want[xprof]) * scale
            bound = REL + (k * ULP if "cumulative" in mine else 0.0)
            assert abs(float(got[mine]) - expected) <= bound * abs(expected), (where, mine)


@pytest.mark.parametrize("with_idle", [True, False], ids=["idle", "no_idle"])
def test_rows_equal_xprof(case, with_idle):
    profile, tables = case
    theirs = tables[0 if with_idle else 1]
    analysis = analyze_framework_op_stats(profile)
    ours = analysis.table(include_idle=with_idle)
    kind = analysis.device_kind
    if kind == "TPU":
        assert_same_rows(ours, theirs)
    elif kind == "CPU":
        assert not (profile.sections["kind"] == "device").any()
        assert (theirs["host_or_device"] == "Host").all()
        assert (ours["host_or_device"] == "Device").sum() > 0
        exact = analyze_framework_op_stats(profile, xla_cpu_ops=False).table(with_idle)
        assert_same_rows(exact, theirs)
    elif kind == "GPU":
        assert not profile.stat_ints(np.arange(profile.n_events), "group_id")[0].any()
        device = theirs[theirs["host_or_device"] == "Device"]
        assert (device["type"] == "IDLE").all()
        assert len(ours[ours["host_or_device"] == "Device"]) > len(device)
        mine = ours[ours["host_or_device"] == "Host"].reset_index(drop=True)
        assert_same_rows(mine, theirs[theirs["host_or_device"] == "Host"].reset_index(drop=True))
    else:  # no XLA device: host rows only, on both sides but for XProf's idle GPUs
        device = theirs["host_or_device"] == "Device"
        if device.any():
            assert_gpus_all_idle(profile, theirs[device])
        assert_same_rows(ours, theirs[~device].reset_index(drop=True))


@pytest.mark.parametrize("with_idle", [True, False], ids=["idle", "no_idle"])
@pytest.mark.parametrize("path", fixture_files.JAX_GPU, ids=fixture_files.ids(fixture_files.JAX_GPU))
def test_jax_gpu_rows_equal_xprof_but_the_cost_model(path, with_idle):
    """On JAX GPU xplanes (MI300X) every row equals XProf's in side, type, name, occurrences
    (an op's most frequent HLO op, each kernel one occurrence), times and self-time shares. The
    FLOP, bandwidth and bound-by columns come from XProf's GPU cost model, whose figures for
    custom calls (hipBLASLt GEMMs, MIOpen convolutions) ours does not reproduce yet."""
    theirs = gviz.frame(xprof_oracle.run(path, "framework_op_stats")[0 if with_idle else 1])
    analysis = analyze_framework_op_stats(xw.open_profile(path))
    assert analysis.device_kind == "GPU"
    assert (theirs["host_or_device"] == "Device").sum() > 1  # XProf lists the XLA ops
    assert_same_rows(analysis.table(include_idle=with_idle), theirs, skip=COST_MODEL)


def assert_gpus_all_idle(profile: xw.Profile, device: pd.DataFrame) -> None:
    """On a GPU run without XLA ops (TensorFlow's own kernels) XProf's device side is one IDLE
    row: the time from each GPU plane's first event to its last end, added up."""
    assert device["type"].tolist() == ["IDLE"]
    tracks = profile.tracks[profile.tracks["section"].str.startswith("/device:GPU:")]
    spans = tracks.groupby("section").agg(start=("start_us", "min"), end=("end_us", "max"))
    expected = float((spans["end"] - spans["start"]).sum())
    assert float(device["total_self_time"].iloc[0]) == round(expected, 3)  # XProf prints ns


def test_ranks_run_over_both_sides(case):
    profile, _ = case
    ours = analyze_framework_op_stats(profile).table()
    assert ours["rank"].tolist() == list(range(1, len(ours) + 1))
    sides = ours["host_or_device"].tolist()
    assert sides == sorted(sides, key=lambda s: s != "Device")
