"""The utilization viewer against XProf 2.24's `utilization_viewer`, live, on the synthetic
counter samples under tests/data/xprof_counters (tests/data/make/xprof_counters.py): planes,
lines and stats exactly as XProf's converter reads them.

Equal: every row of every chip (two TPU v6e, one TPU v7x), in XProf's order within a sample,
numbers to the bit. Rules we chose (docs/utilization_viewer.md), asserted here:

- Host: XProf's host column is always 0; ours is the host's name.
- Sample order: XProf visits a plane's lines in file order; ours by line id (our decoder keeps
  no file order of lines). The v7x plane writes its lines in falling id order.
- `utilization` (achieved / peak) is a column of ours.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.utilization_viewer import analyze_utilization

pytest.importorskip("xprof.convert.raw_to_tool_data")

PATH = Path(__file__).parents[1] / "data" / "xprof_counters" / "synthetic_tpu_counters.xplane.pb"


@pytest.fixture(scope="module")
def both():
    doc = xprof_oracle.run(PATH, "utilization_viewer")
    assert [c["id"] for c in doc["cols"]] == ["host", "device", "sample", "node", "name",
                                             "achieved", "peak", "unit"]
    theirs = [tuple(cell.get("v") for cell in row["c"]) for row in doc["rows"]]
    profile = xw.open_profile(PATH)
    return profile, analyze_utilization(profile), theirs


def test_every_row_equal(both):
    _, ours, theirs = both
    mine = [(0.0, float(d), float(s), float(n), name, a, p, u) for _, d, s, n, name, a, p, u, _
            in ours.itertuples(index=False)]
    by_sample = sorted(theirs, key=lambda r: (r[1], r[2]))  # stable: XProf's order within
    assert mine == by_sample
    assert len(mine) == 562 and {r[4] for r in mine} >= {
        "MXU I4", "MXU E4M3 + E5M2", "Clocks Skipped", "HBM Rd+Wr - core 1", "ICI (Read)",
        "SCS: Smisc Slot", "SC Vector Issue: VEX Slot", "SC Vector Issue:VEX Slot"}
    # a sample without TensorCore cycles has only SparseCore rows (v6e: 2 cores, v7x: 4); one
    # without HBM traffic no read/write split; v7x lists the ICI rows once per TensorCore;
    # device 1's first sample states its values as doubles
    per_sample = ours.groupby(["device", "sample"]).size().to_dict()
    assert per_sample == {(0, 1): 58, (0, 2): 58, (0, 3): 32, (1, 1): 58, (1, 2): 56,
                          (2, 1): 120, (2, 2): 116, (2, 3): 64}
    v7x = ours[(ours["device"] == 2) & (ours["sample"] == 1)]
    assert (v7x["name"] == "ICI (Read)").sum() == 2
    assert set(v7x["node"]) == {0, 1, 2, 3}


def test_rule_host_is_named(both):
    _, ours, theirs = both
    assert {r[0] for r in theirs} == {0.0}
    assert set(ours["host"]) == {"synthetic_tpu_counters"}


def test_rule_samples_by_line_id(both):
    _, ours, theirs = both
    order = list(dict.fromkeys((r[1], r[2]) for r in theirs if r[1] == 2.0))
    assert order == [(2.0, 3.0), (2.0, 2.0), (2.0, 1.0)]  # the file's line order
    assert list(dict.fromkeys(ours.loc[ours["device"] == 2, "sample"])) == [1, 2, 3]


def test_offered_as_xprof_lists_it(both, tmp_path):
    profile, _, _ = both
    from xprof.convert import raw_to_tool_data

    copy = tmp_path / "plugins" / "profile" / "run" / PATH.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(PATH.read_bytes())
    assert "utilization_viewer" in raw_to_tool_data.xspace_to_tool_names([str(copy)])
    assert "utilization_viewer" in {t.key for t in tools.offered(profile)}
