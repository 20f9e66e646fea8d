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
)
KEYS = tuple(t.key for t in TOOLS)


def _has(analysis: str, profile: Profile) -> bool:
    """Whether the profile has data for a tool: `<analysis>_available` of its analysis module,
    imported only when asked."""
    from importlib import import_module

    module = import_module(f".analysis.{analysis}", __package__)
    return bool(getattr(module, f"{analysis}_available")(profile))


def framework(profile: Profile) -> str | None:
    """The framework that wrote the profile, from what its profiler leaves in it: PyTorch's
    (Kineto) names its threads and traces so, JAX names its programs `jit_...` and runs them on
    PjRt threads, TensorFlow runs its own kernels on `tf_Compute` and tf.data threads (JAX on CPU
    also has `tf_XLAEigen` threads, so those say nothing). None when nothing tells."""
    import pandas as pd

    names = pd.concat([profile.sections["name"], profile.built_tracks["name"]]).astype(str)
    modules = profile.hlo_modules["name"].astype(str)
    if ".pt.trace.json" in str(profile.source) or names.str.contains("PyTorch").any():
        return "PyTorch"
    if modules.str.match(r"(jit|pmap|xmap)_").any() or names.str.contains("PjRt|pjrt").any():
        return "JAX"
    if names.str.match(r"tf_(Compute|data_)").any() or modules.str.match(r"a_inference_").any():
        return "TensorFlow"
    return None


_XLA_ADVICE = {
    "TensorFlow": "This TensorFlow run executed its ops as TensorFlow kernels, not XLA programs. "
                  "Compile the step with XLA (tf.function(jit_compile=True), or "
                  "model.compile(jit_compile=True) in Keras) and profile it with "
                  "tf.profiler.experimental.start(logdir) / stop(), or TensorBoard's Keras "
                  "callback (profile_batch=...).",
    "JAX": "Profile jitted steps with `with jax.profiler.trace(logdir):` (or %%xprof) and open "
           "the .xplane.pb it writes.",
    "PyTorch": "PyTorch's own profiler (Kineto) records no XLA programs. On PyTorch/XLA, capture "
               "with torch_xla.debug.profiler (start_server, then trace) to get an .xplane.pb.",
}


def xla_advice(profile: Profile) -> str:
    """How to capture XLA programs (what the Op Profile, HLO tools and Memory Viewer read) with
    the framework that made this profile."""
    known = framework(profile)
    if known is not None:
        return _XLA_ADVICE[known]
    return ("Profile XLA programs with your framework's profiler: jax.profiler.trace (JAX), "
            "tf.profiler.experimental.start with jit_compile=True (TensorFlow), "
            "torch_xla.debug.profiler (PyTorch/XLA).")


def tool(key: str) -> Tool:
    """The registered tool of that key."""
    for entry in TOOLS:
        if entry.key == key:
            return entry
    raise ValueError(f"tool={key!r}: expected one of {', '.join(KEYS)}")


def offered(profile: Profile) -> tuple[Tool, ...]:
    """The tools with data for this profile, in the suite's order."""
    return tuple(t for t in TOOLS if t.offered_for(profile))
