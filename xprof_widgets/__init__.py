"""XProf's profiler tools as notebook widgets.

    import xprof_widgets as xw
    xw.TraceViewer(logdir)

Public names load on first use so that `import xprof_widgets` stays cheap (no jax, no bokeh).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import ProfileError

_LAZY = {
    "open_profile": ".profile.open",
    "Profile": ".profile.model",
}

__all__ = ["ProfileError", "open_profile", "Profile"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xprof_widgets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
