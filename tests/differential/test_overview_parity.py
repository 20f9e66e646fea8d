"""The Overview against XProf's `overview_page` on every XSpace fixture with device ops: the same
device idle time (XProf prints it to 0.1%), and utilization taken over the time the device was
busy, as XProf does. XProf rates FLOPs against the roofline at the program's
arithmetic intensity over complete steps only; we rate them against the device's peak (the Op
Profile's figures), so those two numbers are not compared (docs/from_xprof.md, "Overview").
"""

from __future__ import annotations

import fixture_files
import numpy as np
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import overview

pytest.importorskip("xprof.convert.raw_to_tool_data")

DEVICE = [p for p in fixture_files.XSPACE
          if (xw.open_profile(p).sections["kind"] == "device").any()]


def percent(text: str) -> float:
    return float(text.rstrip("%"))


@pytest.mark.parametrize("path", DEVICE, ids=fixture_files.ids(DEVICE))
def test_idle_time_and_busy_time_utilization(path):
    analysis = xprof_oracle.run(path, "overview_page")[0]["p"]
    profile = xw.open_profile(path)
    ops = analyze_op_profile(profile)
    run = overview(profile, op_analysis=ops).run
    if "device_idle_time_percent" in analysis:  # XProf's TPU analysis
        assert round(100 * run["idle_share"], 1) == percent(analysis["device_idle_time_percent"])
    busy_s = (ops.total_time_ps - ops.idle_time_ps) / 1e12
    flops = float(np.nansum(ops.ops["flops"]))
    assert run["flops_utilization"] == pytest.approx(
        min(1.0, flops / busy_s / ops.device.peak_flops), rel=1e-12)
