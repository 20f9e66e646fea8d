"""TPU custom-call tracing and perf counters against XProf, on the synthetic profiles under
tests/data/custom_calls (`python -m xprof_widgets.synthetic ... --custom-calls`; no real one can be
made here). Kept out of tests/data's top level, which every tool's test runs on, so that the
tools which treat custom calls differently keep the fixtures they were compared on.

Equal: every slice XProf's `trace_viewer@` draws on these files, the instruction lines (`Pallas
Primitives`, `LLO Instructions`, `SALU` ... `MXU0 Instructions`) and `Performance Counters`
among them; XProf's `perf_counters` table row by row. Differences we chose (docs/from_xprof.md,
"Custom calls and perf counters"), asserted as rules:

- `LLO Utilization`: XProf 2.24's trace viewer draws its samples as instants on one row; we draw
  one counter track per execution unit (as XProf's documentation shows them), with the same
  samples at the same times;
- XProf offers `utilization_viewer` on these files (any TPU counter) and answers an empty table
  (the counters are not the v6e ids it reads); we offer it only where it has rows.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import xprof_oracle
from test_trace_parity import XPROF_INSTANT_PS, XPROF_ONLY_ROWS, nesting_depth, our_slices

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.perf_counters import analyze_perf_counters

pytest.importorskip("xprof.convert.raw_to_tool_data")

FILES = sorted((Path(__file__).parents[1] / "data" / "custom_calls").glob("*.xplane.pb"))
UTILIZATION = "LLO Utilization"


@pytest.fixture(scope="module", params=FILES, ids=[p.name for p in FILES])
def case(request):
    theirs = xprof_oracle.trace_events(request.param)
    theirs["duration_ps"] = np.where(theirs["duration_ps"] == XPROF_INSTANT_PS, 0,
                                     theirs["duration_ps"])
    theirs["depth"] = nesting_depth(theirs)
    profile = xw.open_profile(request.param)
    return request.param, profile, our_slices(profile), theirs


def shift_of(ours, theirs) -> int:
    return int(theirs["start_ps"].min() - ours["start_ps"].min())


def test_every_slice_but_the_utilization_samples(case):
    _, _, ours, theirs = case
    drawn = theirs[theirs["track"] != UTILIZATION]
    rows = set(zip(ours["section"], ours["track"], strict=True))
    only_theirs = set(zip(drawn["section"], drawn["track"], strict=True)) - rows
    assert all(XPROF_ONLY_ROWS.match(track) for _, track in only_theirs), only_theirs
    drawn = drawn[[r in rows for r in zip(drawn["section"], drawn["track"], strict=True)]]
    keys = ["section", "track", "name", "start_ps", "duration_ps", "depth"]
    drawn = drawn.assign(start_ps=drawn["start_ps"] - shift_of(ours, theirs))
    theirs_rows = set(zip(drawn["section"], drawn["track"], strict=True))
    shared = ours[[r in theirs_rows for r in zip(ours["section"], ours["track"], strict=True)]]
    assert Counter(zip(*(shared[k] for k in keys), strict=True)) == Counter(
        zip(*(drawn[k] for k in keys), strict=True))
    llo_rows = {t for _, t in rows} & {"Pallas Primitives", "LLO Instructions",
                                       "MXU0 Instructions", "Performance Counters"}
    assert len(llo_rows) == 4


def test_utilization_samples_are_our_counters(case):
    _, profile, ours, theirs = case
    samples = theirs[theirs["track"] == UTILIZATION]
    assert len(samples) > 0 and (samples["duration_ps"] == 0).all()
    t = profile.tracks
    counters = t[t["kind"] == "counter"]
    mine = []
    for track, row in counters.iterrows():
        idx = profile.event_indices(track=int(track))
        mine += [(f"{row['host']} {row['section']}", row["name"], int(s))
                 for s in profile.start_ps[idx].tolist()]
    shift = shift_of(ours, theirs)
    xprofs = [(s, n, int(p) - shift) for s, n, p in zip(samples["section"], samples["name"],
                                                       samples["start_ps"], strict=True)]
    assert Counter(mine) == Counter(xprofs)


def test_perf_counters_table(case):
    path, profile, _, _ = case
    doc = xprof_oracle.run(path, "perf_counters")
    columns = [c["id"] for c in doc["cols"]]
    assert columns == ["Host", "Chip", "Kernel", "Sample", "Counter", "Value", "Description",
                       "Set"]
    theirs = [tuple(cell.get("v") for cell in row["c"]) for row in doc["rows"]]
    ours = analyze_perf_counters(profile)
    mine = [(h, float(c), k, float(s), n, float(v), d, e) for h, c, k, s, n, v, d, e in
            ours.itertuples(index=False)]
    assert mine == theirs


def test_tools_offered(case, tmp_path):
    path, profile, _, _ = case
    from xprof.convert import raw_to_tool_data

    copy = tmp_path / "plugins" / "profile" / "run" / path.name  # XProf writes beside the file
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    names = set(raw_to_tool_data.xspace_to_tool_names([str(copy)]))
    ours = {t.key for t in tools.offered(profile)}
    assert "perf_counters" in names and "perf_counters" in ours
    assert "kernel_stats" in ours  # the custom calls are kernels here; XProf lists none
    assert "utilization_viewer" in names and "utilization_viewer" not in ours  # Rule: no rows
    assert xprof_oracle.run(path, "utilization_viewer")["rows"] == []
