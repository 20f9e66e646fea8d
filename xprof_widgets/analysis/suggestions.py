"""XProf's smart suggestions: named rules over a profile's signals, each with its thresholds.

XProf's master (xprof/convert/smart_suggestion/) runs a rule engine over the figures of its
overview page, input pipeline and op stats; a rule that fires adds a suggestion naming it. The
same rules here, with XProf's names and thresholds, over our analyses' figures (`Signals`):

| rule | fires when |
|---|---|
| ComputeBoundRule | compute utilization > 70% and memory bandwidth utilization < 50% |
| MemoryBoundRule | memory bandwidth utilization > 70% and compute utilization < 50% |
| InputBoundRule | input > 10% of step time, and no host input op time (enqueue or other) |
| HostProcessingBoundRule | input > 10% of step time, and non-enqueue >= 50% of host input time |
| DataTransferBoundRule | input > 10% of step time, and enqueue >= 30% of host input time |
| CollectiveBoundRule | collectives >= 30% of the step time, averaged over steps |
| SparseCoreBoundRule | latency-bound (both utilizations < 50%) and SparseCore step time > 10% of the TensorCore's |
| TensorCoreIdleBoundRule | latency-bound and TensorCore idle > 10% of the step time (TPU steps) |

A signal the profile cannot give (no device peaks on a CPU, no steps, no SparseCore) is None,
and a rule reading it does not fire, as XProf's rules do on a signal they cannot read. A
utilization at its cap (100%: the ops' estimated FLOPs or bytes exceed what the peak allows in
their time, as the cost model does on some GPU programs) is no measurement and is None too. Where
the figures come from, and how they differ from XProf's, is in docs/overview.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..profile.model import Profile
from .input_events import ENQUEUE
from .input_pipeline import InputPipelineAnalysis
from .op_profile import OpProfileAnalysis
from .steps import SOURCES, SPARSE_CORE, device_sections, track_events

UTILIZATION_HIGH_PCT = 70.0
"""Compute (XProf: MXU) or memory bandwidth (HBM) utilization above which a run is bound by it."""
UTILIZATION_LOW_PCT = 50.0
"""The other utilization must stay below this; both below it is latency-bound."""
INPUT_PCT = 10.0
"""Input share of step time above which the input rules look at the host's input time."""
HOST_PROCESSING_PCT = 50.0
"""Non-enqueue share of the host's input time from which the host's processing is the bound."""
DATA_TRANSFER_PCT = 30.0
"""Enqueue share of the host's input time from which the transfers are the bound."""
COLLECTIVE_PCT = 30.0
"""Average collective share of a step from which a run is collective-bound."""
SPARSE_CORE_PCT = 10.0
"""SparseCore step time, as a share of the TensorCore's, above which it is the bound."""
TENSOR_CORE_IDLE_PCT = 10.0
"""TensorCore idle share of the step time above which idle time is the bound."""
ZERO_EPSILON = 1e-6
TPU = "TPU"
SC_STEP_LINES = ("Sparse Core Steps", "Steps")
"""The lines of a SparseCore plane that hold its steps."""


@dataclass(frozen=True)
class Signals:
    """What the rules read, in percent; None where the profile cannot give it."""

    compute_utilization_pct: float | None = None
    """Device FLOP rate over its peak (XProf reads the TPU's MXU counters)."""
    memory_utilization_pct: float | None = None
    """Device memory bandwidth over its peak."""
    input_pct: float | None = None
    """Step time waiting for input (the Input Pipeline's share)."""
    enqueue_pct_of_input: float | None = None
    """Enqueue share of the host's input-op self time (0 when there is none, as XProf)."""
    non_enqueue_pct_of_input: float | None = None
    """The other categories' share of it (0 when there is none, as XProf)."""
    collective_pct: float | None = None
    """Collective communication share of each step, averaged over steps."""
    sparse_core_pct: float | None = None
    """Average SparseCore step time over the average (TensorCore) step time."""
    tensor_core_idle_pct: float | None = None
    """Average TensorCore idle time over the average step time, on device-marked (TPU) steps."""
    input_advice: str = ""
    """The Input Pipeline's advice on its largest host cost, in the framework's words: what the
    input rules recommend."""

    @property
    def input_bound(self) -> bool:
        return self.input_pct is not None and self.input_pct > INPUT_PCT

    @property
    def latency_bound(self) -> bool:
        c, m = self.compute_utilization_pct, self.memory_utilization_pct
        return c is not None and m is not None and c < UTILIZATION_LOW_PCT \
            and m < UTILIZATION_LOW_PCT


@dataclass(frozen=True)
class Rule:
    """One named rule: when it fires, the tool to open, and its advice in words."""

    name: str
    tool: str
    fires: Callable[[Signals], bool]
    text: Callable[[Signals], str]


def _both(s: Signals, high: str, low: str) -> bool:
    h, lo = getattr(s, high), getattr(s, low)
    return h is not None and lo is not None and h > UTILIZATION_HIGH_PCT \
        and lo < UTILIZATION_LOW_PCT


RULES = (
    Rule("ComputeBoundRule", "op",
         lambda s: _both(s, "compute_utilization_pct", "memory_utilization_pct"),
         lambda s: (f"Compute-bound: the device computes at {s.compute_utilization_pct:.1f}% "
                    f"of its peak while using {s.memory_utilization_pct:.1f}% of its memory "
                    "bandwidth. Compute in bfloat16 where the model allows it, check the "
                    "costliest ops for waste, and try other batch sizes.")),
    Rule("MemoryBoundRule", "op",
         lambda s: _both(s, "memory_utilization_pct", "compute_utilization_pct"),
         lambda s: (f"Memory-bound: the device uses {s.memory_utilization_pct:.1f}% of its "
                    f"memory bandwidth but computes at {s.compute_utilization_pct:.1f}% of its "
                    "peak, so it mostly waits for data. Larger batches (or gradient "
                    "accumulation) do more work per byte read; fuse the memory-bound ops.")),
    Rule("InputBoundRule", "input",
         lambda s: s.input_bound and s.non_enqueue_pct_of_input is not None
         and abs(s.non_enqueue_pct_of_input) < ZERO_EPSILON
         and abs(s.enqueue_pct_of_input) < ZERO_EPSILON,
         lambda s: (f"Input-bound: {s.input_pct:.1f}% of step time waits for input, but no "
                    "host input operation was recognised (a custom input pipeline?). "
                    + (s.input_advice or "Annotate its parts to see which one is slow."))),
    Rule("HostProcessingBoundRule", "input",
         lambda s: s.input_bound and s.non_enqueue_pct_of_input is not None
         and s.non_enqueue_pct_of_input >= HOST_PROCESSING_PCT,
         lambda s: (f"Bound by the host's input processing: "
                    f"{s.input_pct * s.non_enqueue_pct_of_input / 100:.1f}% of step time is "
                    "spent reading and preparing data on the host. "
                    + (s.input_advice or "Read ahead and in parallel, preprocess offline what "
                       "does not change, and tune buffer sizes and thread counts."))),
    Rule("DataTransferBoundRule", "input",
         lambda s: s.input_bound and s.enqueue_pct_of_input is not None
         and s.enqueue_pct_of_input >= DATA_TRANSFER_PCT,
         lambda s: (f"Bound by host-to-device transfers: "
                    f"{s.input_pct * s.enqueue_pct_of_input / 100:.1f}% of step time is spent "
                    "sending data to the device. "
                    + (s.input_advice or "Send fewer, larger batches and prefetch to the "
                       "device so copies overlap compute."))),
    Rule("CollectiveBoundRule", "trace",
         lambda s: s.collective_pct is not None and s.collective_pct >= COLLECTIVE_PCT,
         lambda s: (f"Collective-bound: collectives (all-reduce, all-gather, ...) take "
                    f"{s.collective_pct:.1f}% of a step on average. Overlap them with compute, "
                    "look for stragglers that make the others wait, and send less (gradients "
                    "in bfloat16).")),
    Rule("SparseCoreBoundRule", "trace",
         lambda s: s.latency_bound and s.sparse_core_pct is not None
         and s.sparse_core_pct > SPARSE_CORE_PCT,
         lambda s: (f"SparseCore-bound: its steps take {s.sparse_core_pct:.1f}% of the step "
                    "time. Shrink the embedding tables (int8, pruning), order the sparse "
                    "indices for locality, and use the framework's TPU embedding API.")),
    Rule("TensorCoreIdleBoundRule", "trace",
         lambda s: s.latency_bound and s.tensor_core_idle_pct is not None
         and s.tensor_core_idle_pct > TENSOR_CORE_IDLE_PCT,
         lambda s: (f"The TensorCore idles {s.tensor_core_idle_pct:.1f}% of the step time. "
                    "Launch fewer, larger ops, keep more of the step inside compiled "
                    "functions, and move logging and checkpoints off the step's path.")),
)
"""XProf's rules, in its registration order's spirit: the bounds, then where time goes."""
INPUT_RULES = frozenset({"InputBoundRule", "HostProcessingBoundRule", "DataTransferBoundRule"})


def suggestions(signals: Signals) -> list[dict[str, str]]:
    """The rules that fire on `signals`, as {"text", "tool", "rule"}."""
    return [{"text": rule.text(signals), "tool": rule.tool, "rule": rule.name}
            for rule in RULES if rule.fires(signals)]


def signals(profile: Profile, input_analysis: InputPipelineAnalysis,
            op_analysis: OpProfileAnalysis | None) -> Signals:
    """The rules' signals from the analyses the Overview already made."""
    device = op_analysis.overview() if op_analysis is not None else {}
    steps = input_analysis.steps
    has_steps = len(steps) > 0
    breakdown = input_analysis.host_breakdown
    host_input = float(breakdown.sum())
    avg_step_us = float(steps["duration_us"].mean()) if has_steps else float("nan")
    tpu_steps = input_analysis.step_markers.source == SOURCES[0] and any(
        TPU in name for name in device_sections(profile))
    enqueue = 100 * float(breakdown[ENQUEUE]) / host_input if host_input > 0 else 0.0
    return Signals(
        compute_utilization_pct=_pct(device.get("flops_utilization")),
        memory_utilization_pct=_pct(device.get("bandwidth_utilization")),
        input_pct=100 * input_analysis.input_share if has_steps else None,
        enqueue_pct_of_input=enqueue,
        non_enqueue_pct_of_input=100.0 - enqueue if host_input > 0 else 0.0,
        collective_pct=(100 * float((steps["collectives_us"] / steps["duration_us"])
                                    .where(steps["duration_us"] > 0).mean())
                        if has_steps else None),
        sparse_core_pct=_sparse_core_pct(profile, avg_step_us) if has_steps else None,
        tensor_core_idle_pct=(100 * float(steps["other_us"].mean()) / avg_step_us
                              if has_steps and tpu_steps and avg_step_us > 0 else None),
        input_advice=input_analysis.host_advice(),
    )


def _pct(fraction) -> float | None:
    """A utilization in percent; None where unknown or at the cap (see the module doc)."""
    if fraction is None or not np.isfinite(fraction) or fraction >= 1.0:
        return None
    return 100 * float(fraction)


def _sparse_core_pct(profile: Profile, avg_step_us: float) -> float | None:
    """Average step on the SparseCores' step lines over the average step; None without any."""
    t = profile.built_tracks
    lines = t.index[t["section"].str.contains(SPARSE_CORE, regex=False)
                    & t["name"].isin(SC_STEP_LINES)].to_numpy(np.int64)
    events = track_events(profile, lines)
    if not events.shape[0] or not avg_step_us > 0:
        return None
    return 100 * float(profile.duration_ps[events].mean()) / 1e6 / avg_step_us
