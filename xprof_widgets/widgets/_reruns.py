"""Closing the widgets a cell's re-run replaces.

A displayed widget stays alive in the kernel once its output is gone (ipywidgets' registry and the
`Out` history hold it), and so does its profile: a cell that opens the newest run, re-run after
each new capture, would keep every earlier capture's profile. So when a cell runs again, the
widgets its previous run displayed are closed after it (they let go of their profiles and view
state, RequestWidget.close), unless a later cell displayed one again or a notebook variable
still names it.

Cells are told apart by the cell id the front end sends with each execution (JupyterLab,
Notebook 7, VS Code; IPython's `ExecutionInfo.cell_id`); where none comes, nothing is closed.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import ipywidgets

from ..profile.release import release_memory

_shown: weakref.WeakKeyDictionary[Any, tuple[str, weakref.ref]] = weakref.WeakKeyDictionary()
"""Each displayed widget's last display: the cell's id and that run's ExecutionResult."""
_hooked: weakref.WeakSet[Any] = weakref.WeakSet()
"""The shells whose `post_run_cell` closes replaced widgets."""


class ClosedOnRerun:
    """Mixin for a widget: closed when the cell that displayed it runs again."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        note_display(self)
        return super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]

    if hasattr(ipywidgets.Widget, "_ipython_display_"):  # ipywidgets 7 displays through this
        def _ipython_display_(self, **kwargs: Any) -> Any:
            note_display(self)
            return super()._ipython_display_(**kwargs)  # type: ignore[misc]


def note_display(widget: Any) -> None:
    """Remembers which cell run is displaying `widget`, if a cell with an id is running."""
    shell = _shell()
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    cell_id = getattr(getattr(running, "info", None), "cell_id", None)
    if cell_id is None:
        return
    if shell not in _hooked:
        shell.events.register("post_run_cell", _close_replaced)
        _hooked.add(shell)
    _shown[widget] = (cell_id, weakref.ref(running))


def _close_replaced(result: Any) -> None:
    cell_id = getattr(result.info, "cell_id", None)
    replaced = [w for w, (cell, run) in list(_shown.items())
                if cell == cell_id and run() is not result]
    if not replaced:
        return
    named = {id(v) for k, v in _shell().user_ns.items() if not k.startswith("_")}
    for widget in replaced:
        _shown.pop(widget, None)
        if id(widget) not in named:
            widget.close()
    release_memory()


def _shell() -> Any:
    ipython = sys.modules.get("IPython")  # loaded wherever a widget can be displayed
    return ipython.get_ipython() if ipython is not None else None
