"""The overview page: what ran where, how long a step takes and why, which ops to look at.

It is a summary of the other analyses (steps from the input pipeline, split by the step
breakdown every tool shares, analysis/step_breakdown.py; ops from the op profile; framework ops
from the framework op stats), so it never disagrees with them. A part that cannot be computed (no steps, no ops) is replaced by the sentence saying why,
not dropped silently.

As XProf's overview page: the run environment (hosts, device type, device cores; a CPU-only run
has none), the top ten device framework ops by self time (idle excluded) beside the top HLO ops,
and the share of device compute time in 16-bit and 32-bit precision with XProf's advice below
10% 16-bit. Every share is named for what it is a share of (SHARE_LABELS), since the tables
beside each other divide by different times: an HLO op's share is of the device time (every
core's span, idle included), a framework op's of the device's framework-op self time (its busy
time, idle excluded, as XProf's), a step part's of the step time; so copy-done.4 of
tpu_v6e_inference is 21.4% of device time and 24.7% of framework-op self time. An op computes in 16 bits when its result is a 16-bit float (`f16`, `bf16`; XProf
reads TensorFlow GPU kernels' `half` shapes), in 32 bits otherwise; collectives, copies, infeed
and outfeed are not compute. Each recommendation names the tool it comes from, so the view can
open it, and the rule that made it: XProf's smart-suggestion rules first (analysis/suggestions.py,
with XProf's names and thresholds), then ours where XProf's say nothing: the Input Pipeline's
verdict (INPUT_VERDICT_RULE, left out when one of XProf's input rules fired), the Op Profile's
suggestions, the precision advice and, on Kineto traces, the GPU advice (RULES_OURS).

A PyTorch (Kineto) trace adds its own sections (analysis/kineto/overview.py): HTA's GPU time
breakdowns with their advice, and the step breakdown of PyTorch's TensorBoard plugin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.model import Profile
from .framework_op_stats import FrameworkOpStatsAnalysis, analyze_framework_op_stats
from .input_pipeline import STEP_PARTS, InputPipelineAnalysis, analyze_input_pipeline
from .kineto.overview import (
    GPU_IDLE_RULE,
    MEMORY_RULE,
    OVERLAP_RULE,
    gpu_advice,
    gpu_breakdowns,
    plugin_breakdown,
)
from .op_profile import OpProfileAnalysis, analyze_op_profile
from .suggestions import INPUT_RULES, signals, suggestions

TOP_OPS = 10
LOW_PRECISION_PCT = 10.0
"""Below this share of 16-bit device compute, XProf suggests more 16-bit ops."""
FRAMEWORK_OP_COLUMNS = ["operation", "type", "self_time_us", "share_of_framework_self_time",
                        "cumulative_share_of_framework_self_time", "flop_rate_gflops"]
"""XProf's top device framework ops (its `selfTimePercent`, `cumulativeTimePercent` are these
shares, as fractions of the device's framework-op self time, idle excluded)."""
TOP_OP_COLUMNS = ["name", "category", "time_us", "share_of_device_time", "flops_utilization",
                  "bandwidth_utilization", "bound_by"]
SHARE_LABELS = {
    "share_of_device_time": "% of device time",
    "share_of_framework_self_time": "% of framework-op self time",
    "cumulative_share_of_framework_self_time": "cumulative % of framework-op self time",
    "share_of_step_time": "% of step time",
    "compute_16bit_share": "% of device compute time",
}
"""The column headers: each share says what it is a share of (the module doc)."""
SHARE_TITLES = {
    "share_of_device_time": "Share of the device time: every core's span from its first op to "
                            "its last, idle included (the op profile's)",
    "share_of_framework_self_time": "Share of the device's framework-op self time: its busy "
                                    "time, idle excluded (XProf's overview)",
    "share_of_step_time": "Share of the step time, all steps together",
}
"""Longer words for a header's hover."""
_SIXTEEN_BIT = re.compile(r"^\(?(?:bf16|f16)\[|\bhalf\b|\bfp16\b")
_NOT_COMPUTE = re.compile(r"(?i)all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|"
                          r"collective|\bsend\b|\brecv\b|^copy-(?:start|done)|infeed|outfeed|"
                          r"nccl|memcpy")


@dataclass
class Overview:
    """The overview of one profile; every field is plain data, ready for a table or JSON."""

    run: dict[str, Any]
    steps: dict[str, Any] | None
    step_breakdown: pd.DataFrame
    top_ops: pd.DataFrame
    top_framework_ops: pd.DataFrame
    precision: dict[str, Any] | None = None
    recommendations: list[dict[str, str]] = field(default_factory=list)
    """{"text", "tool", "rule"}: the advice, the key of the tool it comes from
    (xprof_widgets.tools) and the rule that made it (suggestions.RULES or RULES_OURS)."""
    notes: list[str] = field(default_factory=list)
    gpu: dict[str, Any] | None = None
    """A Kineto trace's GPU breakdowns as records (gpu_breakdowns); None without GPU work."""
    torch: dict[str, Any] | None = None
    """A Kineto trace's step breakdown as PyTorch's plugin shows it (plugin_breakdown)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "steps": self.steps,
            "step_breakdown": self.step_breakdown.to_dict("records"),
            "top_ops": self.top_ops.to_dict("records"),
            "top_framework_ops": self.top_framework_ops.to_dict("records"),
            "precision": self.precision,
            "recommendations": self.recommendations,
            "notes": self.notes,
            "gpu": self.gpu,
            "torch": self.torch,
            "share_labels": {**SHARE_LABELS, **({"compute_16bit_share": (
                f"% of {self.precision['where']} compute time")} if self.precision else {})},
            "share_titles": SHARE_TITLES,
        }


def overview(profile: Profile, input_analysis: InputPipelineAnalysis | None = None,
             op_analysis: OpProfileAnalysis | None = None,
             framework_analysis: FrameworkOpStatsAnalysis | None = None) -> Overview:
    """Summarizes `profile`; pass analyses already computed to reuse them."""
    notes: list[str] = []
    if input_analysis is None:
        input_analysis = analyze_input_pipeline(profile)
    if op_analysis is None:
        try:
            op_analysis = analyze_op_profile(profile)
        except ProfileError as exc:
            from ..profile.framework import framework

            if framework(profile) != "PyTorch":  # Kineto records no XLA ops: nothing missing
                notes.append(str(exc))
    if framework_analysis is None:
        framework_analysis = analyze_framework_op_stats(profile)
    steps, breakdown = _steps(input_analysis)
    if steps is None:
        notes.append(input_analysis.no_steps_message())
    recommendations = _smart_suggestions(profile, input_analysis, op_analysis, notes)
    if not INPUT_RULES & {r["rule"] for r in recommendations}:
        recommendations.append({"text": input_analysis.recommendation(), "tool": "input",
                                "rule": INPUT_VERDICT_RULE})
    precision = _precision(op_analysis)
    if op_analysis is not None:
        recommendations += [{"text": text, "tool": "op", "rule": OP_RULE}
                            for text in op_analysis.suggestions(limit=3)]
    if precision is not None and precision["statement"]:
        recommendations.append({"text": precision["statement"], "tool": "op",
                                "rule": PRECISION_RULE})
    try:
        gpu = gpu_breakdowns(profile)
    except Exception as exc:  # noqa: BLE001 - an optional part: said in a note, not raised
        gpu = None
        notes.append(f"The GPU time breakdowns could not be computed ({type(exc).__name__}: "
                     f"{exc}).")
    if gpu is not None:
        recommendations = gpu_advice(gpu) + recommendations
    torch = None
    if input_analysis.framework == "PyTorch":
        try:
            torch = plugin_breakdown(profile)
        except Exception as exc:  # noqa: BLE001 - an optional part: said in a note, not raised
            notes.append(f"The step breakdown in PyTorch's categories could not be computed "
                         f"({type(exc).__name__}: {exc}).")
    return Overview(run=_run(profile, op_analysis), steps=steps, step_breakdown=breakdown,
                    top_ops=_top_ops(op_analysis),
                    top_framework_ops=top_framework_ops(framework_analysis),
                    precision=precision, recommendations=recommendations, notes=notes, gpu=gpu,
                    torch=torch)


INPUT_VERDICT_RULE, OP_RULE, PRECISION_RULE = "InputPipelineVerdict", "OpProfileTopOps", \
    "LowPrecisionShare"
RULES_OURS = (GPU_IDLE_RULE, OVERLAP_RULE, MEMORY_RULE, INPUT_VERDICT_RULE, OP_RULE,
              PRECISION_RULE)
"""Our recommendations' rules, where XProf's smart suggestions have none (docs/overview.md)."""


def _smart_suggestions(profile: Profile, input_analysis: InputPipelineAnalysis,
                       op_analysis: OpProfileAnalysis | None, notes: list[str]
                       ) -> list[dict[str, str]]:
    """XProf's rules that fire on the profile; a failure is a note, not an exception."""
    try:
        return suggestions(signals(profile, input_analysis, op_analysis))
    except Exception as exc:  # noqa: BLE001 - an optional part: said in a note, not raised
        notes.append(f"XProf's smart-suggestion rules could not be evaluated "
                     f"({type(exc).__name__}: {exc}).")
        return []


def _run(profile: Profile, ops: OpProfileAnalysis | None) -> dict[str, Any]:
    devices = profile.sections[profile.sections["kind"] == "device"]
    device = ops.overview() if ops is not None else {}
    kind = device.get("device_kind") or ("CPU" if devices.empty else "device")
    count = int(device.get("devices") or len(devices))
    return {
        "source": profile.source,
        "run": profile.run,
        "hosts": list(profile.hosts),
        "host_count": len(profile.hosts),
        "device_core_count": 0 if kind == "CPU" else count,
        "device_kind": kind,
        "device_type": device.get("device_type") or ("CPU only" if devices.empty else
                                                     _device_name(devices)),
        "devices": count,
        "duration_ms": profile.duration_us / 1000,
        # what the files hold: the rows XProf derives are made only for the timeline
        "events": int(profile.file_tracks["n_events"].sum()),
        "tracks": len(profile.file_tracks),
        "flops_utilization": device.get("flops_utilization"),
        "bandwidth_utilization": device.get("bandwidth_utilization"),
        "idle_share": device.get("idle_share"),
    }


def _device_name(devices: pd.DataFrame) -> str:
    """What the first device is: the name its profiler gives it (Kineto's deviceProperties,
    e.g. `NVIDIA A100-PG509-200`), else its section's name."""
    stats = devices["stats"].iat[0]
    named = stats.get("device_name") if isinstance(stats, dict) else None
    return str(named) if named else str(devices["name"].iat[0])


def _steps(analysis: InputPipelineAnalysis) -> tuple[dict[str, Any] | None, pd.DataFrame]:
    steps = analysis.steps
    if not len(steps):
        return None, pd.DataFrame(columns=["part", "avg_ms", "share_of_step_time"])
    total = float(steps["duration_us"].sum())
    rows = [{"part": c, "avg_ms": float(steps[c].mean()) / 1000,
             "share_of_step_time": float(steps[c].sum()) / total if total else 0.0}
            for c in STEP_PARTS]
    stats = analysis.step_time_stats()
    summary = {"count": len(steps), **{k: float(v) for k, v in stats.items()},
               "input_share": analysis.input_share, "verdict": analysis.verdict}
    return summary, pd.DataFrame(rows)


def _top_ops(ops: OpProfileAnalysis | None) -> pd.DataFrame:
    """The op profile's longest ops (TOP_OP_COLUMNS); its `time_share` is of the device time."""
    if ops is None:
        return pd.DataFrame(columns=TOP_OP_COLUMNS)
    table = ops.to_dataframe().rename(columns={"time_share": "share_of_device_time"})
    return table[TOP_OP_COLUMNS].head(TOP_OPS).reset_index(drop=True)


def top_framework_ops(analysis: FrameworkOpStatsAnalysis, limit: int = TOP_OPS) -> pd.DataFrame:
    """The device's framework ops with the most self time, idle excluded (FRAMEWORK_OP_COLUMNS),
    as XProf's overview lists them; shares of the device's framework-op self time."""
    table = analysis.table(include_idle=False)
    rows = table[table["host_or_device"] == "Device"].head(limit)
    return pd.DataFrame({
        "operation": rows["operation"].to_numpy(dtype=object),
        "type": rows["type"].to_numpy(dtype=object),
        "self_time_us": rows["total_self_time_us"].to_numpy(np.float64),
        "share_of_framework_self_time":
            rows["device_total_self_time_pct"].to_numpy(np.float64) / 100,
        "cumulative_share_of_framework_self_time":
            rows["device_cumulative_total_self_time_pct"].to_numpy(np.float64) / 100,
        "flop_rate_gflops": rows["measured_flop_rate_gflops"].to_numpy(np.float64),
    })


def _precision(ops: OpProfileAnalysis | None) -> dict[str, Any] | None:
    """16-bit and 32-bit shares of device compute time (see the module doc); None without
    compute ops."""
    if ops is None:
        return None
    table = ops.ops
    kind = table["category"].astype(str) + " " + table["name"].astype(str)
    compute = ~kind.str.contains(_NOT_COMPUTE).to_numpy()
    result = table["shape"].astype(str).where(table["shape"].astype(str) != "",
                                              table["expression"].astype(str).str.split(
                                                  " = ", n=1).str[-1])
    sixteen = result.str.contains(_SIXTEEN_BIT).to_numpy()
    time = table["time_ps"].to_numpy(np.float64)
    total = float(time[compute].sum())
    if total <= 0:
        return None
    share16 = float(time[compute & sixteen].sum()) / total
    where = "host" if ops.device.kind == "CPU" else "device"  # a CPU run's XLA ops: the host's
    statement = ""
    if 100 * share16 < LOW_PRECISION_PCT:
        statement = (f"Only {100 * share16:.1f}% of {where} computation is 16 bit. So you might "
                     "want to replace more 32-bit Ops by 16-bit Ops to improve performance (if "
                     "the reduced accuracy is acceptable).")
    return {"compute_us": total / 1e6, "compute_16bit_share": share16,
            "compute_32bit_share": 1 - share16, "statement": statement, "where": where}


