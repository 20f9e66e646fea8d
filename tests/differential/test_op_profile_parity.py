"""The Op Profile against XProf's `op_profile` on every XSpace fixture, op by op.

Where XProf lists ops, ours are the same ops with the same category, occurrences, time share,
FLOPS and bandwidth utilization, per category and per program too. Differences we chose
(docs/from_xprof.md, "Op Profile") are asserted as rules:

- XProf's op profile of a CPU-only run is empty; ours lists the XLA CPU ops (their FLOPs and
  bytes counted from the HLO), where the profile has any.
- A TPU op without a `memory_access_breakdown` stat has 0% HBM bandwidth in XProf; we take its
  `bytes_accessed` as its HBM traffic.
- XProf lists no GPU op when no kernel is grouped into a step (no `group_id`, as on our
  synthetic GPU profile); we list the kernels by their `hlo_op`. XProf's op profile is then
  one IDLE node, the GPU planes' spans added up, each span taken from the events' offsets from
  their own line's timestamp; ours is the timeline's span (on the synthetic GPU profiles the
  first and the last event lie on lines 1 ns apart: XProf's span is 1 ns shorter per GPU).
- GPUs without XLA ops (XProf's 2020 TensorFlow demo): XProf's one IDLE node as above; we say
  there are no XLA ops to profile.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import fixture_files
import numpy as np
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile.schema import XSpace

pytest.importorskip("xprof.convert.raw_to_tool_data")

REL = 1e-15
"""XProf's JSON doubles against ours: the same inputs (integer picoseconds, counted FLOPs and
bytes) through a few operations in another order, each rounding by half an ulp; 1e-15 is 4.5
ulps at least, and every fixture is within it (1e-9 before: a million times looser)."""


def _reference_module():
    path = Path(__file__).parents[1] / "bench" / "op_profile_xprof_reference.py"
    spec = importlib.util.spec_from_file_location("op_profile_xprof_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _reference_module()


def close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= REL * abs(theirs)


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    by_category = xprof_oracle.run(request.param, "op_profile", {"group_by": "category"})
    by_program = xprof_oracle.run(request.param, "op_profile", {"group_by": "program"})
    theirs = REFERENCE.reference(by_category, by_program, "", request.param.name)
    profile = xw.open_profile(request.param)
    try:
        ours = analyze_op_profile(profile)
    except ProfileError as error:
        ours = error
    return profile, theirs, ours, request.param


def test_ops_where_xprof_lists_them(case):
    profile, theirs, ours, _ = case
    if not theirs["ops"]:
        if isinstance(ours, ProfileError):
            assert "no XLA ops" in str(ours)
        elif ours.device.kind == "GPU":  # no event at all is grouped into a step
            assert not profile.stat_ints(np.arange(profile.n_events), "group_id")[0].any()
        else:
            assert not (profile.sections["kind"] == "device").any() and ours.device.kind == "CPU"
        return
    no_breakdown = without_breakdown(profile)
    ops = ours.to_dataframe()
    assert len(ops) == len(theirs["ops"])
    for want in theirs["ops"]:
        got = ops[(ops["name"] == want["name"])
                  & (ops["program_id"].astype(str) == want["program_id"])]
        assert len(got) == 1, want["name"]
        got = got.iloc[0]
        assert got["category"] == want["category"], want["name"]
        assert got["occurrences"] == want["occurrences"], want["name"]
        assert close(got["time_share"], want["time_share"]), want["name"]
        assert close(got["flops_utilization"], want["flops_utilization"]), want["name"]
        if (int(want["program_id"]), want["name"]) in no_breakdown:
            assert want["bandwidth_utilization"] == 0 < got["bandwidth_utilization"]
        else:
            assert close(got["bandwidth_utilization"], want["bandwidth_utilization"])


def without_breakdown(profile: xw.Profile) -> set[tuple[int, str]]:
    """(program id, op name) of the ops whose metadata has no `memory_access_breakdown`."""
    md = profile.metadata
    return {(int(stats["program_id"]), name)
            for name, stats in zip(md["display_name"], md["stats"], strict=True)
            if "program_id" in stats and "memory_access_breakdown" not in stats}


def gpu_spans_ps(path: Path, line_relative: bool) -> int:
    """The GPU planes' spans (first event's start to last event's end) added up: on the timeline,
    or as XProf takes them, from each event's offset from its own line's timestamp."""
    space = XSpace()
    space.ParseFromString(path.read_bytes())
    total = 0
    for plane in space.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        origin = {line.id: 0 if line_relative else 1000 * line.timestamp_ns
                  for line in plane.lines}
        starts = [origin[line.id] + e.offset_ps for line in plane.lines for e in line.events]
        ends = [origin[line.id] + e.offset_ps + e.duration_ps
                for line in plane.lines for e in line.events]
        total += max(ends) - min(starts) if starts else 0
    return total


def assert_xprof_lists_no_op(path: Path, theirs: dict, ours) -> None:
    """Where XProf lists no op it lists no category or program either. Rules: a CPU run's op
    profile is empty in XProf, ours lists the XLA CPU ops where there are any; on GPUs without
    ops grouped into steps XProf's root is one IDLE node holding the GPUs' spans (from
    line-relative offsets), ours lists the kernels' categories over the timeline's spans, or
    says there are no XLA ops (TensorFlow's own kernels)."""
    assert theirs["categories"] == {} and theirs["programs"] == {}
    root = xprof_oracle.run(path, "op_profile", {"group_by": "category"})["byCategory"]
    if theirs["device_type"] == "CPU_ONLY":
        assert theirs["total_time_ps"] == 0 and root["name"] == "by_category"
    else:
        assert theirs["device_type"] == "GPU" and root["name"] == "IDLE"
        assert theirs["total_time_ps"] == gpu_spans_ps(path, line_relative=True)
    if isinstance(ours, ProfileError):
        assert "no XLA ops" in str(ours)
        return
    assert ours.device.kind == ("CPU" if theirs["device_type"] == "CPU_ONLY" else "GPU")
    table = ours.table(group_by="category")
    assert (table["kind"] == "op").any() and (table["kind"] != "op").any()
    if ours.device.kind == "GPU":
        assert ours.total_time_ps == gpu_spans_ps(path, line_relative=False)


def test_categories_and_programs(case):
    _, theirs, ours, path = case
    if not theirs["ops"]:
        assert_xprof_lists_no_op(path, theirs, ours)
        return
    assert close(ours.total_time_ps, theirs["total_time_ps"])
    assert close(ours.idle_time_ps, theirs["idle_time_ps"])
    table = ours.table(group_by="category")
    rows = {r.label: r for r in table[table["kind"] != "op"].itertuples()}
    assert set(rows) == set(theirs["categories"])
    for name, want in theirs["categories"].items():
        assert close(rows[name].time_share, want["time_share"]), name
    programs = ours.table(group_by="program")
    shares = {r.label: r.time_share for r in programs[programs["level"] == 0].itertuples()}
    ids = dict(zip(ours.ops["program"], ours.ops["program_id"], strict=True))
    for name, want in theirs["programs"].items():
        label = name if name == "IDLE" else name.rsplit("(", 1)[0]
        assert label == "IDLE" or f"{label}({ids[label]})" == name
        assert close(shares[label], want["time_share"]), name
