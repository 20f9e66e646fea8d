"""The overview page: what ran where, how long a step takes and why, which ops to look at.

It is a summary of the other analyses (steps and their breakdown from the input pipeline,
ops from the op profile), so it never disagrees with them. A part that cannot be computed
(no steps, no ops) is replaced by the sentence saying why, not dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import ProfileError
from ..profile.model import Profile
from .input_pipeline import STEP_PARTS, InputPipelineAnalysis, analyze_input_pipeline
from .op_profile import OpProfileAnalysis, analyze_op_profile

TOP_OPS = 10


@dataclass
class Overview:
    """The overview of one profile; every field is plain data, ready for a table or JSON."""

    run: dict[str, Any]
    steps: dict[str, Any] | None
    step_breakdown: pd.DataFrame
    top_ops: pd.DataFrame
    recommendations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "steps": self.steps,
            "step_breakdown": self.step_breakdown.to_dict("records"),
            "top_ops": self.top_ops.to_dict("records"),
            "recommendations": self.recommendations,
            "notes": self.notes,
        }


def overview(profile: Profile, input_analysis: InputPipelineAnalysis | None = None,
             op_analysis: OpProfileAnalysis | None = None) -> Overview:
    """Summarizes `profile`; pass analyses already computed to reuse them."""
    notes: list[str] = []
    recommendations: list[str] = []
    if input_analysis is None:
        input_analysis = analyze_input_pipeline(profile)
    if op_analysis is None:
        try:
            op_analysis = analyze_op_profile(profile)
        except ProfileError as exc:
            notes.append(str(exc))
    steps, breakdown = _steps(input_analysis)
    if steps is None:
        notes.append(input_analysis.no_steps_message())
    recommendations.append(input_analysis.recommendation())
    if op_analysis is not None:
        recommendations.extend(op_analysis.suggestions(limit=3))
    return Overview(run=_run(profile, op_analysis), steps=steps, step_breakdown=breakdown,
                    top_ops=_top_ops(op_analysis), recommendations=recommendations, notes=notes)


def _run(profile: Profile, ops: OpProfileAnalysis | None) -> dict[str, Any]:
    devices = profile.sections[profile.sections["kind"] == "device"]
    device = ops.overview() if ops is not None else {}
    return {
        "source": profile.source,
        "run": profile.run,
        "hosts": list(profile.hosts),
        "device_kind": device.get("device_kind") or ("CPU" if devices.empty else "device"),
        "device_type": device.get("device_type") or ("CPU only" if devices.empty else
                                                     devices["name"].iat[0]),
        "devices": int(device.get("devices") or len(devices)),
        "duration_ms": profile.duration_us / 1000,
        "events": profile.n_events,
        "tracks": len(profile.tracks),
        "flops_utilization": device.get("flops_utilization"),
        "bandwidth_utilization": device.get("bandwidth_utilization"),
        "idle_share": device.get("idle_share"),
    }


def _steps(analysis: InputPipelineAnalysis) -> tuple[dict[str, Any] | None, pd.DataFrame]:
    steps = analysis.steps
    if not len(steps):
        return None, pd.DataFrame(columns=["part", "avg_ms", "share"])
    total = float(steps["duration_us"].sum())
    rows = [{"part": c, "avg_ms": float(steps[c].mean()) / 1000,
             "share": float(steps[c].sum()) / total if total else 0.0} for c in STEP_PARTS]
    stats = analysis.step_time_stats()
    summary = {"count": len(steps), **{k: float(v) for k, v in stats.items()},
               "input_share": analysis.input_share, "verdict": analysis.verdict}
    return summary, pd.DataFrame(rows)


def _top_ops(ops: OpProfileAnalysis | None) -> pd.DataFrame:
    columns = ["name", "category", "time_us", "time_share", "flops_utilization",
               "bandwidth_utilization", "bound_by"]
    if ops is None:
        return pd.DataFrame(columns=columns)
    table = ops.to_dataframe()
    return table[columns].head(TOP_OPS).reset_index(drop=True)
