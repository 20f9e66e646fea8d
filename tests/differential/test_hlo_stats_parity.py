"""HLO stats and the roofline model against XProf's `hlo_stats` and `roofline_model`, on every
XSpace fixture, row by row.

Where XProf lists device ops (TPU), every HLO stats row is equal: program, category, op name
and text, framework op, occurrences, times, self-time shares, FLOP rates, bandwidths (ours in
GB/s, XProf's in GiB/s), intensity and bound-by; the source is XProf's file:line without its
HTML wrapper. Every roofline row is equal too: the whole profile's program row and op rows,
with and without infeed/outfeed, the per-step program rows and their average. Differences we
chose (docs/from_xprof.md, "HLO Stats and Roofline Model") are asserted as rules:

- per-step rows carry the step numbers of the profile's `Steps` lines; XProf renumbers the
  device steps after the host's step groups (the order and the numbers are the same);
- XProf prints an all-zero "Average" row when there are no steps; we print none;
- CPU runs: XProf has neither table; we list the XLA CPU ops in the HLO stats, as the op
  profile does, and make no roofline (no device peaks);
- GPU: XProf lists no op when no kernel is grouped into a step (our synthetic GPU profile) and
  its program rows count nothing; we list the kernels' ops, as the op profile does.
"""

from __future__ import annotations

import re

import fixture_files
import gviz
import numpy as np
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.hlo_stats import hlo_stats
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.roofline_model import analyze_roofline_model
from xprof_widgets.errors import ProfileError

pytest.importorskip("xprof.convert.raw_to_tool_data")

REL = 1e-15
"""XProf's JSON doubles against ours: the same inputs (integer picoseconds, counted FLOPs and
bytes) through a few operations in another order, each rounding by half an ulp; 1e-15 is 4.5
ulps at least, and every fixture is within it (1e-9 before: a million times looser)."""
GIB = 2**30 / 1e9  # ours (GB/s) per XProf's GiB/s
BANDWIDTHS = [(f"{m}_bw", f"{m}_bw_gbps", GIB) for m in ("measured_memory", "hbm", "cmem_read",
                                                           "cmem_write")]
"""The bandwidths both tables have: XProf's GiB/s, our GB/s."""
HLO_TEXT = ["program_id", "category", "hlo_op_name", "hlo_op_expression", "tf_op_name",
            "bound_by"]
HLO_NUMBERS = [  # (XProf, ours, ours / XProf)
    ("rank", "rank", 1), *xprof_oracle.TIME_COLUMNS,
    ("total_self_time_percent", "total_self_time_pct", 1),
    ("cumulative_total_self_time_percent", "cumulative_total_self_time_pct", 1),
    ("model_flop_rate", "model_flop_rate_gflops", 1),
    ("normalized_flop_rate", "normalized_flop_rate_gflops", 1),
    *BANDWIDTHS,
    ("operational_intensity", "operational_intensity", 1),
]
ROOF_TEXT = [("category", "category"), ("operation", "operation"), ("bound_by", "bound_by"),
             ("hlo_module_id", "program_id"), ("include_infeed_outfeed", "include_infeed_outfeed")]
ROOF_NUMBERS = [
    ("rank", "rank", 1), *xprof_oracle.TIME_COLUMNS,
    ("total_self_time_percent", "total_self_time_pct", 100),
    ("cumulative_total_self_time_percent", "cumulative_total_self_time_pct", 100),
    ("measured_flop_rate", "measured_flop_rate_gflops", 1),
    ("model_flop_rate", "model_flop_rate_gflops", 1),
    *BANDWIDTHS,
    ("vmem_read_bw", "vmem_read_bw_gbps", GIB), ("vmem_write_bw", "vmem_write_bw_gbps", GIB),
    ("operational_intensity", "operational_intensity", 1),
    ("hbm_operational_intensity", "hbm_operational_intensity", 1),
    ("vmem_read_operational_intensity", "vmem_read_operational_intensity", 1),
    ("vmem_write_operational_intensity", "vmem_write_operational_intensity", 1),
    ("bottleneck_operational_intensity", "bottleneck_operational_intensity", 1),
    ("total_time_per_core", "total_time_per_core_us", 1),
    ("total_time_in_percentage", "total_time_pct", 100),
    ("optimal_flop_rate", "optimal_flop_rate_gflops", 1),
    ("roofline_efficiency", "roofline_efficiency", 1),
    ("compute_efficiency", "compute_efficiency", 1),
    ("max_mem_bw_utilization", "max_mem_bw_utilization", 1),
]
_SOURCE = re.compile(r"^<div class='source-info-cell' title='.*'>(.*)</div>$", re.DOTALL)


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    profile = xw.open_profile(request.param)
    try:
        kind = analyze_op_profile(profile).device.kind
    except ProfileError:
        kind = ""
    hlo = gviz.frame(xprof_oracle.run(request.param, "hlo_stats"))
    roofline = xprof_oracle.run(request.param, "roofline_model")
    roofline = gviz.frame(roofline[0]) if roofline else None
    return profile, kind, hlo, roofline


def assert_rows(ours, theirs, text, numbers):
    assert len(ours) == len(theirs)
    for (_, got), (_, want) in zip(ours.iterrows(), theirs.iterrows(), strict=True):
        where = want.get("operation", want.get("hlo_op_name"))
        for xprof, mine in text:
            assert str(got[mine]) == str(want[xprof]), (where, mine)
        for xprof, mine, scale in numbers:
            if xprof not in want:
                continue
            expected = float(want[xprof]) * scale
            assert abs(float(got[mine]) - expected) <= REL * abs(expected), (where, mine)


def test_hlo_stats_equal_xprof(case):
    profile, kind, theirs, _ = case
    if kind in ("CPU", "GPU"):
        assert theirs.empty
        assert len(hlo_stats(profile)) == len(analyze_op_profile(profile).ops) > 0
        return
    if kind == "":
        assert theirs.empty
        return
    ours = hlo_stats(profile)
    assert_rows(ours, theirs, [(c, c) for c in HLO_TEXT], HLO_NUMBERS)
    sources = [(_SOURCE.match(s).group(1) if s else "") for s in theirs["source_info"]]
    assert ours["source_info"].tolist() == sources


def test_roofline_equals_xprof(case):
    profile, kind, _, theirs = case
    if kind == "" and theirs is not None and not theirs.empty:
        # A GPU run without XLA ops (TensorFlow's own kernels, XProf's 2020 demo): XProf's
        # program rows count nothing (the GPU planes' span, 0 FLOP/s); we draw no roofline.
        assert profile.sections["name"].str.startswith("/device:GPU:").any()
        assert (theirs["category"] == "Program").all()
        assert (theirs["measured_flop_rate"] == 0).all()
        return
    if kind in ("CPU", ""):
        assert theirs is None or theirs.empty
        return
    ours = analyze_roofline_model(profile).table
    if kind == "GPU":
        assert (theirs["category"] == "Program").all()
        assert (theirs["measured_flop_rate"] == 0).all()
        assert (ours.loc[ours["category"] == "Program", "measured_flop_rate_gflops"] > 0).all()
        return
    for with_feeds in (True, False):
        want = theirs[theirs["include_infeed_outfeed"] == with_feeds]
        got = ours[ours["include_infeed_outfeed"] == with_feeds]
        assert_rows(got[got["step"] == "Total"].reset_index(drop=True),
                    want[want["step"] == "Total"].reset_index(drop=True), ROOF_TEXT,
                    ROOF_NUMBERS)
        their_steps = want[~want["step"].isin(["Total", "Average"])]
        our_steps = got[~got["step"].isin(["Total", "Average"])]
        assert_rows(our_steps.reset_index(drop=True), their_steps.reset_index(drop=True),
                    ROOF_TEXT, ROOF_NUMBERS)
        if len(our_steps):
            numbers = our_steps["step"].astype(int).to_numpy()
            xprof = their_steps["step"].astype(int).to_numpy()
            assert np.array_equal(xprof - xprof[0], numbers - numbers[0])
            assert_rows(got[got["step"] == "Average"].reset_index(drop=True),
                        want[want["step"] == "Average"].reset_index(drop=True), ROOF_TEXT,
                        ROOF_NUMBERS)
        else:
            average = want[want["step"] == "Average"]
            assert (average["measured_flop_rate"] == 0).all() and (average["total_time"] == 0).all()
            assert not (got["step"] == "Average").any()
