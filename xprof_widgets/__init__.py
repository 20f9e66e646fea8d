"""XProf's profiler tools as notebook widgets.

    import xprof_widgets as xw
    tv = xw.TraceViewer(logdir)   # every widget on these files shares one decoded profile
    xw.close(tv.profile)          # frees it for good

Public names load on first use so that `import xprof_widgets` stays cheap (no jax, no bokeh).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import ProfileError
from .tools import TOOLS

_LAZY = {
    "open_profile": ".opening",
    "close": ".opening",
    "Profile": ".profile.model",
    "Profiler": ".widgets.profiler",
    "compare": ".widgets.compare",
    "Compare": ".widgets.compare",
    "TraceAnalysis": ".hta_face",
    "TraceDiff": ".hta_face",
    **{t.name: t.module for t in TOOLS},
}

__all__ = [
    "Compare",
    "DistributedView",
    "FrameworkOpStats",
    "GraphViewer",
    "HloStats",
    "InputPipeline",
    "KernelStats",
    "MegascaleStats",
    "MemoryProfile",
    "MemoryViewer",
    "OpProfile",
    "PerfCounters",
    "PodViewer",
    "Profile",
    "ProfileError",
    "Profiler",
    "RooflineModel",
    "TraceAnalysis",
    "TraceDiff",
    "TraceViewer",
    "UtilizationViewer",
    "close",
    "compare",
    "load_ipython_extension",
    "open_profile",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xprof_widgets' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext xprof_widgets`: registers the `%xprof` / `%%xprof` magic."""
    from .magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as unload

    unload(ipython)


def __dir__() -> list[str]:
    return sorted(__all__)
