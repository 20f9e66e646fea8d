"""The tool registry: each tool's key, title and widget, and whether a profile has data for it.

The suite's tabs (`xw.Profiler`), `%xprof --tool` and the package's public names all read this
list, so a new tool is one entry here plus its analysis, widget and view. Like XProf's tool list,
a tool whose `applies` says no is not offered for that profile. Importing this module is cheap:
widgets load when first used.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .profile.framework import framework, xla_advice  # noqa: F401 - tools.framework, as before

if TYPE_CHECKING:
    from .profile.model import Profile


@dataclass(frozen=True)
class Tool:
    key: str  # `%xprof --tool KEY`, `xw.Profiler(..., tool=KEY)`
    title: str  # the suite's tab
    module: str  # where the widget class lives, relative to the package
    name: str  # the widget class, also `xw.<name>`
    applies: Callable[[Profile], bool] | None = None  # None: every profile

    def offered_for(self, profile: Profile) -> bool:
        """Whether the tool has data; a check that fails offers the tool, whose tab then says
        what went wrong, rather than taking the suite down."""
        try:
            return self.applies is None or bool(self.applies(profile))
        except Exception as exc:  # noqa: BLE001 - isolated: the tab says what failed
            pod = sys.modules.get("xprof_widgets.pod.profile")
            note = (f"{profile.source}: could not tell whether the {self.title} has data "
                    f"({type(exc).__name__}: {exc}).")
            if (pod is None or not isinstance(exc, pod.NotDistributed)) \
                    and note not in profile.warnings:  # a shared profile: said once
                profile.warnings.append(note)
            return True  # a pod's host-only tool: its tab says so, and a host picked works


TOOLS: tuple[Tool, ...] = (
    Tool("overview", "Overview", ".widgets.overview", "Overview"),
    Tool("trace", "Trace Viewer", ".widgets.trace_viewer", "TraceViewer"),
    Tool("op", "Op Profile", ".widgets.op_profile", "OpProfile", lambda p: _has("hlo_stats", p)),
    Tool("memory", "Memory Viewer", ".widgets.memory_viewer", "MemoryViewer",
         lambda p: len(p.hlo_modules) > 0),  # as XProf: only with HLO protos
    Tool("graph", "Graph Viewer", ".widgets.graph_viewer", "GraphViewer",
         lambda p: _has("graph", p)),
    Tool("input", "Input Pipeline", ".widgets.input_pipeline", "InputPipeline"),
    Tool("framework_op_stats", "Framework Op Stats", ".widgets.framework_op_stats",
         "FrameworkOpStats", lambda p: _has("framework_op_stats", p)),
    Tool("kernel_stats", "Kernel Stats", ".widgets.kernel_stats", "KernelStats",
         lambda p: _has("kernel_stats", p)),
    Tool("hlo_stats", "HLO Stats", ".widgets.hlo_stats", "HloStats", lambda p: _has("hlo_stats", p)),
    Tool("roofline", "Roofline Model", ".widgets.hlo_stats", "RooflineModel",
         lambda p: _has("roofline_model", p)),
    Tool("memory_profile", "Memory Profile", ".widgets.memory_profile", "MemoryProfile",
         lambda p: _has("memory_profile", p)),
    Tool("pod_viewer", "Pod Viewer", ".widgets.pod_viewer", "PodViewer",
         lambda p: _has("pod_viewer", p)),
    Tool("distributed", "Distributed", ".widgets.distributed", "DistributedView",
         lambda p: _has("distributed", p)),
    Tool("perf_counters", "Perf Counters", ".widgets.perf_counters", "PerfCounters",
         lambda p: _has("perf_counters", p)),
    Tool("utilization_viewer", "Utilization Viewer", ".widgets.utilization_viewer",
         "UtilizationViewer", lambda p: _has("utilization_viewer", p)),
    Tool("megascale_stats", "Megascale Stats", ".widgets.megascale_stats", "MegascaleStats",
         lambda p: _has("megascale_stats", p)),
)
KEYS = tuple(t.key for t in TOOLS)


def _has(analysis: str, profile: Profile) -> bool:
    """Whether the profile has data for a tool: `<analysis>_available` of its analysis module,
    imported only when asked."""
    from importlib import import_module

    module = import_module(f".analysis.{analysis}", __package__)
    return bool(getattr(module, f"{analysis}_available")(profile))


def tool(key: str) -> Tool:
    """The registered tool of that key."""
    for entry in TOOLS:
        if entry.key == key:
            return entry
    raise ValueError(f"tool={key!r}: expected one of {', '.join(KEYS)}")


def offered(profile: Profile) -> tuple[Tool, ...]:
    """The tools with data for this profile, in the suite's order."""
    return tuple(t for t in TOOLS if t.offered_for(profile))
