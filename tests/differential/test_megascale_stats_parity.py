"""Megascale stats against XProf 2.24's `megascale_stats`, live, on the synthetic multislice
host under tests/data/xprof_counters (tests/data/make/xprof_counters.py): the planes, lines,
stats and HLO attributes XProf's DCN slack analysis reads.

Equal: every collective and every number (slack, observed duration, send / send-done /
recv-done stalls, stall, aggregated stall, occurrences, bytes, required bandwidth). Rules we
chose (docs/megascale_stats.md), asserted here:

- Row order: XProf lists the collectives in hash-map order; ours in the order they first
  completed. Compared as sets.
- Recv stall: XProf divides the recv ops' time by 1e6 once more than the other stalls (so it
  reads 0 here); ours is the recv ops' mean time like the other stalls.
- Host stall: XProf writes "-" (it reads no host plane for it); ours is NaN.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.megascale_stats import analyze_megascale

pytest.importorskip("xprof.convert.raw_to_tool_data")

PATH = Path(__file__).parents[1] / "data" / "xprof_counters" / "synthetic_megascale.xplane.pb"
HOST = PATH.name.split(".")[0]
XPROF_COLUMNS = ["rendezvous_name", "recv_op_name", "send_op_name", "transfer_type",
                 "slack_time", "host_stall", "observed_duration", "send_stall",
                 "send_done_stall", "recv_stall", "recv_done_stall", "stall_duration",
                 "total_stall", "occurrences", "net_tx_bytes", "required_bandwidth"]
OURS = ["rendezvous", "recv_op_name", "send_op_name", "transfer_type", "slack_time_ms",
        "host_stall_ms", "observed_duration_ms", "send_stall_ms", "send_done_stall_ms",
        "recv_stall_ms", "recv_done_stall_ms", "stall_duration_ms", "total_stall_ms",
        "occurrences", "bytes_transmitted", "required_bandwidth_gbps"]
RULES = {"recv_stall", "host_stall"}


@pytest.fixture(scope="module")
def both():
    (doc,) = xprof_oracle.run(PATH, "megascale_stats", {"host": HOST})
    assert [c["id"] for c in doc["cols"]] == XPROF_COLUMNS
    theirs = {row["c"][0]["v"]: dict(zip(XPROF_COLUMNS, (c.get("v") for c in row["c"]),
                                         strict=True)) for row in doc["rows"]}
    ours = analyze_megascale(xw.open_profile(PATH))
    return ours, theirs


def test_every_collective_and_number_equal(both):
    ours, theirs = both
    assert set(ours["rendezvous"]) == set(theirs) and len(theirs) == 4
    for row in ours.to_dict("records"):
        xprof = theirs[row["rendezvous"]]
        for mine, their in zip(OURS, XPROF_COLUMNS, strict=True):
            if their not in RULES:
                assert row[mine] == xprof[their], (row["rendezvous"], their)
    assert {r["transfer_type"] for r in theirs.values()} == {
        "ALL_REDUCE", "ALL_GATHER", "ONE_TO_ONE", "REDUCE_SCATTER"}
    assert 0 in {r["net_tx_bytes"] for r in theirs.values()}  # no replica group stated


def test_rule_recv_stall_not_divided_again(both):
    ours, theirs = both
    for row in ours.to_dict("records"):
        assert theirs[row["rendezvous"]]["recv_stall"] == 0.0
        assert row["recv_stall_ms"] > 0


def test_rule_host_stall_is_nan(both):
    ours, theirs = both
    assert {r["host_stall"] for r in theirs.values()} == {"-"}
    assert all(math.isnan(v) for v in ours["host_stall_ms"])


def test_rule_order_is_first_completion(both):
    ours, _ = both
    assert list(ours["rendezvous"]) == ["all-reduce.1_dcn", "all-gather.2_dcn",
                                        "send-recv.3_dcn", "reduce-scatter.4_dcn"]


def test_offered_as_xprof_lists_it(tmp_path):
    from xprof.convert import raw_to_tool_data

    copy = tmp_path / "plugins" / "profile" / "run" / PATH.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(PATH.read_bytes())
    assert "megascale_stats" in raw_to_tool_data.xspace_to_tool_names([str(copy)])
    assert "megascale_stats" in {t.key for t in tools.offered(xw.open_profile(PATH))}
