"""The Overview's Kineto sections: what a PyTorch trace adds to the overview page.

For a PyTorch (Kineto) trace with GPU work, HTA's four breakdowns (analysis/kineto/gpu_time.py) are
there too, with advice in plain words when a GPU idles half the time or more (why, from the
idle breakdown: host wait, kernel wait or other), when under half of a rank's communication
overlaps computation, or when copies and memsets alone take a tenth of kernel time or more.
A Kineto trace also gets the step-time breakdown of PyTorch's TensorBoard plugin, one row per
step in its categories, and its GPU utilization, estimated SM efficiency and achieved
occupancy (analysis/kineto/step_breakdown.py): the GPU parts and figures only where the trace
has GPU work, as the plugin shows them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...profile.model import Profile
from ..kernel_families import COMMUNICATION_FAMILIES
from .gpu_time import (
    comm_comp_overlap,
    communication_by_family,
    host_works,
    idle_time_breakdown,
    kernel_breakdown,
    time_breakdown_table,
)
from .step_breakdown import PARTS as TORCH_PARTS
from .step_breakdown import torch_step_breakdown

GPU_IDLE_PCT = 50.0
"""A GPU idle this share of its kernel time or more gets advice on why."""
LOW_OVERLAP_PCT = 50.0
"""Below this share of communication overlapping computation, advice to overlap more."""
MEMORY_PCT = 10.0
"""Copies and memsets alone taking this share of kernel time or more get advice."""
_GPU_PARTS = ("kernel_us", "memcpy_us", "memset_us", "runtime_us")
"""The plugin's parts shown only where the trace has GPU work."""
GPU_IDLE_RULE, OVERLAP_RULE, MEMORY_RULE = "GpuIdle", "CommunicationOverlap", "MemoryKernels"


def plugin_breakdown(profile: Profile) -> dict[str, Any] | None:
    """PyTorch's TensorBoard plugin's Overview figures as records for the view: `parts`
    (column, label) in its order, `steps` (one row per step, times in us), `average` (one
    per host) and `gpu` (per GPU); as the plugin, the GPU parts only where the trace has GPU
    work, Communication only where some ran, the GPU figures only for GPUs that ran kernels.
    None without steps."""
    result = torch_step_breakdown(profile)
    if not len(result.steps):
        return None
    shown = [(column, label) for column, label in TORCH_PARTS
             if (result.has_gpu or column not in _GPU_PARTS)
             and (column != "communication_us" or result.steps[column].any())]
    return {"parts": [{"column": c, "label": label} for c, label in shown],
            "steps": result.steps.to_dict("records"),
            "average": result.average().to_dict("records"),
            "gpu": result.gpu.to_dict("records")}


def time_breakdown(profile: Profile) -> pd.DataFrame:
    """Each rank's GPU time split into idle, compute and non-compute, as HTA's
    get_temporal_breakdown reports it (analysis/kineto/gpu_time.py; gpu_time.TIME_COLUMNS); one row
    per host file with GPU work, none for a trace without any."""
    return time_breakdown_table(host_works(profile))


def gpu_breakdowns(profile: Profile) -> dict[str, Any] | None:
    """HTA's four breakdowns as records for the view: temporal and kernel types as their
    tables, the overlap per rank, the idle time one row per rank and stream (`host_wait_us`,
    `kernel_wait_us`, `other_us`, `idle_us`); also the communication kernels per family that
    ran (`communication`) and every family looked for (`communication_families`), so the view
    names what communicated, or what it looked for when nothing did; None without GPU work."""
    temporal = time_breakdown(profile)
    if not len(temporal):
        return None
    idle = idle_time_breakdown(profile).pivot_table(
        index=["rank", "stream"], columns="idle_category", values="idle_time_us",
        aggfunc="sum").reset_index()
    streams = [{"rank": int(r.rank), "stream": int(r.stream), "host_wait_us": r.host_wait,
                "kernel_wait_us": r.kernel_wait, "other_us": r.other,
                "idle_us": r.host_wait + r.kernel_wait + r.other}
               for r in idle.itertuples(index=False)]
    return {"temporal": temporal.to_dict("records"),
            "kernel_types": kernel_breakdown(profile).to_dict("records"),
            "overlap": comm_comp_overlap(profile).to_dict("records"), "idle": streams,
            "communication": communication_by_family(profile).to_dict("records"),
            "communication_families": [f.name for f in COMMUNICATION_FAMILIES]}


def gpu_advice(gpu: dict[str, Any]) -> list[dict[str, str]]:
    """Plain-word advice from the GPU breakdowns (see the module doc), each naming its tool."""
    many = len(gpu["temporal"]) > 1
    on = (lambda rank: f" on rank {rank}") if many else (lambda rank: "")
    out = []
    worst = max(gpu["temporal"], key=lambda r: r["idle_pct"])
    if worst["idle_pct"] >= GPU_IDLE_PCT:
        waits = {k: sum(s[f"{k}_us"] for s in gpu["idle"] if s["rank"] == worst["rank"])
                 for k in ("host_wait", "kernel_wait", "other")}
        total = sum(waits.values())
        cause = max(waits, key=waits.get) if total > 0 else "host_wait"
        share = f"{100 * waits[cause] / total:.1f}%" if total > 0 else "most"
        text = f"GPU idle {worst['idle_pct']:.1f}% of the time{on(worst['rank'])}: "
        out.append({
            "host_wait": {"text": text + f"host-bound ({share} of its streams' idle time waits "
                          "for the CPU to launch the next kernel); see the CPU ops between "
                          "kernels in the Trace Viewer.", "tool": "trace", "rule": GPU_IDLE_RULE},
            "kernel_wait": {"text": text + f"many small kernels ({share} of its streams' idle "
                            "time is gaps under 30 us between kernels, launch overhead); fewer, "
                            "larger kernels (fusion, CUDA graphs) help; see Kernel Stats.",
                            "tool": "kernel_stats", "rule": GPU_IDLE_RULE},
            "other": {"text": text + f"its streams wait on something else ({share} of their "
                      "idle time: events, other streams, synchronization); see the Trace "
                      "Viewer.", "tool": "trace", "rule": GPU_IDLE_RULE},
        }[cause])
    talking = [r for r in gpu["overlap"] if r["communication_us"] > 0]
    if talking:
        least = min(talking, key=lambda r: r["comp_comm_overlap_pctg"])
        if least["comp_comm_overlap_pctg"] < LOW_OVERLAP_PCT:
            out.append({"text": f"Only {least['comp_comm_overlap_pctg']:.1f}% of communication "
                        f"time overlaps computation{on(least['rank'])}: for the rest no "
                        "kernel computes beside the collectives; launching them while compute "
                        "still runs (gradient buckets, prefetching) hides them; see the Trace "
                        "Viewer.", "tool": "trace", "rule": OVERLAP_RULE})
    memory = [r for r in gpu["kernel_types"] if r["kernel_type"] == "MEMORY"
              and r["percentage"] >= MEMORY_PCT]
    if memory:
        most = max(memory, key=lambda r: r["percentage"])
        out.append({"text": f"Memory copies and sets take {most['percentage']:.1f}% of GPU "
                    f"kernel time{on(most['rank'])}: keep tensors on the device and copy less "
                    "often; see Kernel Stats.", "tool": "kernel_stats", "rule": MEMORY_RULE})
    return out
