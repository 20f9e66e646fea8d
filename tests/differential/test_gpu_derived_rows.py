"""The rows XProf derives after each GPU stream (`XLA Modules - from #N`, `XLA Ops - from #N`),
ours against XProf's on a built stream that has each case its derivation distinguishes: program
ids (`jit_f(7)`), modules and step groups that change, `a::b` op names (two levels), equal spans
nested, kernels without a module or without ops, and a memcpy (not a kernel) in between."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
import xprof_oracle
from test_trace_parity import XPROF_INSTANT_PS, nesting_depth, our_slices

import xprof_widgets as xw

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from xspace_builder import build_xspace

pytest.importorskip("xprof.convert.raw_to_tool_data")

K = {"kernel_details": "regs:32 grid:1,1,1 block:128,1,1"}


def kernel(name, at_us, us, module=None, op=None, group=None, program=None, kernel_stat=True):
    stats = dict(K) if kernel_stat else {"memcpy_details": "kind:HtoD size:1024"}
    stats |= {k: v for k, v in (("hlo_module", module), ("hlo_op", op), ("program_id", program))
              if v is not None}
    if group is not None:  # as frameworks write it (XProf reads a uint64 group id as 0)
        stats["group_id"] = ("int64", group)
    return (name, int(at_us * 1e6), int(us * 1e6), stats)


EVENTS = [
    kernel("k0", 0, 5, "jit_f", "fusion.1", 1, 7),
    kernel("k1", 6, 5, "jit_f", "fusion.1", 1, 7),  # same op, same module run: one slice
    kernel("k2", 12, 5, "jit_f", "while.3::fusion.2", 1, 7),
    kernel("k3", 18, 5, "jit_f", "while.3::fusion.4", 1, 7),  # the while goes on
    kernel("memcpy", 24, 2, "jit_f", "copy.1", 1, 7, kernel_stat=False),
    kernel("k4", 27, 5, "jit_f", "while.3", 1, 7),  # one level: equal to its parent's span
    kernel("k5", 33, 5, "jit_f", "fusion.1", 2, 7),  # a new step group
    kernel("k6", 40, 5, "jit_g", "fusion.1", 2),  # another module, no program id
    kernel("k7", 46, 5, None, "fusion.9"),  # ops without a module, in the group before it
    kernel("k8", 52, 5, "jit_g", None, 2),  # a module without ops
    kernel("k9", 58, 5, "jit_g", "fusion.1", 2),
    kernel("k11", 64, 5, "jit_f", "fusion.1", 3, 7),
    kernel("k12", 70, 5, "jit_h", "fusion.1", 3, 7),  # a new module ends the op slice too
]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> Path:
    # XProf derives GPU rows only in a space with a host plane.
    planes = [{"name": "/host:CPU", "lines": [{"name": "python", "timestamp_ns": 1_000,
                                                "events": [("step", 0, 80_000_000, {})]}]},
              {"name": "/device:GPU:0", "stats": {"compute_cap_major": 9},
               "lines": [{"name": "Stream #7(Compute)", "timestamp_ns": 1_000, "events": EVENTS},
                         {"name": "Stream #8(MemcpyH2D)", "timestamp_ns": 1_000,
                          "events": [kernel("k10", 3, 4, "jit_f", "fusion.1", 1, 7)]}]}]
    out = tmp_path_factory.mktemp("gpu") / "gpu_rows.xplane.pb"
    out.write_bytes(build_xspace(planes))
    return out


def test_derived_stream_rows_are_xprofs(path):
    ours = our_slices(xw.open_profile(path))
    theirs = xprof_oracle.trace_events(path)
    theirs = theirs[theirs["track"].str.contains(" - from #")].reset_index(drop=True)
    theirs["depth"] = nesting_depth(theirs)
    ours = ours[ours["track"].str.contains(" - from #")]
    assert set(theirs["track"]) == {"XLA Modules - from #1", "XLA Ops - from #1",
                                    "XLA Modules - from #2", "XLA Ops - from #2"}
    shift = int(theirs["start_ps"].min() - ours["start_ps"].min())
    keys = ["track", "name", "start_ps", "duration_ps", "depth"]
    theirs = theirs.assign(start_ps=theirs["start_ps"] - shift, duration_ps=theirs[
        "duration_ps"].where(theirs["duration_ps"] != XPROF_INSTANT_PS, 0))
    mine = Counter(zip(*(ours[k] for k in keys), strict=True))
    xprofs = Counter(zip(*(theirs[k] for k in keys), strict=True))
    assert mine == xprofs, (sorted(xprofs - mine)[:6], sorted(mine - xprofs)[:6])
