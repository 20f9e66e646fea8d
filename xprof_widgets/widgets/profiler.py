"""`Profiler`: every tool on one profile, in tabs, with run and host pickers and links between tools.

The profile is decoded once and shared by all tabs; a tab's widget is made the first time it is
shown. Tools ask for each other through their `link` trait (`{"tool": ..., "op": ...}`), set
by their views ("show in Trace Viewer", "open in Op Profile"); the suite routes the request and
switches tabs.
"""

from __future__ import annotations

import html
import os
import re
import threading
from importlib import import_module
from typing import Any

import ipywidgets
import numpy as np

from .. import tools as registry
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, describe
from ._reruns import ClosedOnRerun

ALL_HOSTS = "all hosts"


class Profiler(ClosedOnRerun, ipywidgets.VBox):
    """The whole profiler on one profile: every tool that has data for it (xprof_widgets.tools),
    in tabs.

    Args:
        path_or_profile: a logdir, run directory, profile file, fsspec URL or opened `Profile`.
        run, host: the run and host(s) to open (default: the newest run, every host).
        tool: the tab shown first (a key of xprof_widgets.tools: "overview", "trace", ...).
    """

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, tool: str = "overview", **kwargs: Any):
        first = registry.tool(tool)  # refuses an unknown key before opening anything
        super().__init__(**kwargs)
        self.profile = open_profile(path_or_profile, run=run, host=host)
        # A PodProfile (xprof_widgets.pod): the host picker selects among hosts on its workers.
        self._pod = self.profile if hasattr(self.profile, "map_hosts") else None
        self._path = None if isinstance(path_or_profile, Profile) or self._pod is not None \
            else os.fspath(path_or_profile)
        self._tools: dict[str, Any] = {}
        # Under ipykernel 7 JupyterLab sends widget messages on a subshell thread, so a click's
        # link and a cell can ask for the same tab at once: one of them makes it.
        self._making = threading.RLock()
        self._lay_out()
        self.show(first.key)

    def close(self) -> None:
        """Closes the tabs' widgets too, and lets go of the profile (see RequestWidget.close)."""
        for widget in self.__dict__.pop("_tools", {}).values():
            widget.close()
        super().close()
        self.__dict__.pop("profile", None)

    # ---- tabs -------------------------------------------------------------------------------
    @property
    def tab_keys(self) -> list[str]:
        """The tabs' tools, in order."""
        return [t.key for t in self._offered]

    def tool(self, key: str) -> Any:
        """The widget of one tab ("trace", "op", ...), made on first use."""
        with self._making:
            if key not in self._tools:
                self._make(key)
            return self._tools[key]

    def _make(self, key: str) -> None:
        entry = self._entry(key)
        widget_class = getattr(import_module(entry.module, "xprof_widgets"), entry.name)
        try:
            widget = widget_class(self.profile)
        except ProfileError as exc:  # a tool that cannot run on this profile says why
            widget = _empty_state(f"No {entry.title} for this profile", str(exc))
        except Exception as exc:  # noqa: BLE001 - one tool's failure is its tab's alone
            note = (f"{self.profile.source}: the {entry.title} failed on this profile "
                    f"({describe(exc)}); the other tools are not affected.")
            if note not in self.profile.warnings:  # the profile is shared: said once
                self.profile.warnings.append(note)
            widget = ipywidgets.Label(note)
            for made in self._tools.values():  # their strips of notes say so too
                if isinstance(made, RequestWidget):
                    made.show_notes()
        if isinstance(widget, RequestWidget):
            widget._linked = True
            widget.observe(self._on_link, names="link")
        self._tools[key] = widget
        children = list(self.tabs.children)
        children[self.tab_keys.index(key)] = widget
        self.tabs.children = children

    def show(self, key: str) -> Any:
        """Switches to a tab and returns its widget."""
        widget = self.tool(key)
        self.tabs.selected_index = self.tab_keys.index(key)
        return widget

    def _entry(self, key: str) -> registry.Tool:
        for entry in self._offered:
            if entry.key == key:
                return entry
        raise ValueError(f"{self.profile.source}: the {registry.tool(key).title} has no data in this "
                         f"profile; its tools are {', '.join(self.tab_keys)}.")

    def _on_tab(self, change: dict) -> None:
        if change["new"] is not None:
            self.tool(self.tab_keys[change["new"]])

    # ---- links between tools ----------------------------------------------------------------
    def _on_link(self, change: dict) -> None:
        request = change["new"] or {}
        if request.get("tool") == "trace" and request.get("time_us") is not None:
            self.show_moment_in_trace(float(request["time_us"]), request.get("event"))
            return
        op = request.get("op")
        if not op:
            if request.get("tool") in self.tab_keys:  # a tool named, nothing in it: its tab
                self.show(request["tool"])
            return
        if request.get("tool") == "trace":
            self.show_in_trace(op)
        elif request.get("tool") == "op":
            self.show_in_op_profile(op)
        elif request.get("tool") == "graph" and "graph" in self.tab_keys:
            self.show_in_graph(op, request.get("module"))

    def show_in_trace(self, op: str) -> None:
        """Moves the Trace Viewer to the first occurrence of an op and selects them all."""
        viewer = self.show("trace")
        hits = viewer.search(f"^{re.escape(op)}$", regex=True)
        if not len(hits):
            return
        first = hits.iloc[0]
        events = hits["event"].to_numpy(np.int64)
        duration = float(first["duration_us"])
        pad = max(duration * 4, 1.0)
        viewer.window = (float(first["start_us"]) - pad, float(first["start_us"]) + duration + pad)
        viewer.selected_events = events[:1000].tolist()

    def show_moment_in_trace(self, time_us: float, event: int | None = None) -> None:
        """Moves the Trace Viewer to a moment (us) and selects the slices running on the thread
        of `event` (an allocator event) when it happened: the ops that allocated or freed. (The
        moment clicked may fall between two ops; the allocation always lies inside one.)"""
        viewer = self.show("trace")
        selected = np.empty(0, np.int64)
        reach = 0.0
        if event is not None:
            t = self.profile.tracks
            own = t.loc[int(self.profile.track_of(np.array([int(event)]))[0])]
            thread = t.index[(t["host"] == own["host"]) & (t["section"] == own["section"])
                             & (t["name"] == own["name"]) & (t["kind"] == "slices")]
            at = float(self.profile.start_ps[int(event)]) / 1e6
            reach = abs(at - time_us)
            if len(thread):
                selected = self.profile.event_indices(at, at, track=list(thread))
        innermost = float(self.profile.duration_ps[selected].min()) / 1e6 if len(selected) else 0
        pad = max(innermost * 4, 10.0, reach * 1.5)
        viewer.window = (time_us - pad, time_us + pad)
        viewer.selected_events = selected[:1000].tolist()

    def show_in_graph(self, op: str, module: str | None = None) -> None:
        """Centres the Graph Viewer on an op (an HLO instruction's name, of `module` when the
        link names one); an op no module holds leaves the graph as it was."""
        viewer = self.show("graph")
        try:
            viewer.show(op, module)
        except ProfileError:
            return

    def show_in_op_profile(self, op: str) -> None:
        """Filters the Op Profile to one op (by its name)."""
        table = self.show("op")
        table.name_filter = f"^{re.escape(op)}$"

    # ---- run and host pickers -------------------------------------------------------------
    def _header(self) -> ipywidgets.HBox | None:
        self.run_picker: ipywidgets.Dropdown | None = None
        self.host_picker: ipywidgets.Dropdown | None = None
        pickers = []
        runs = self.profile.runs
        if self._path is not None and len(runs) > 1:
            self.run_picker = ipywidgets.Dropdown(options=list(runs["run"]), value=self.profile.run,
                                                  description="Run")
            self.run_picker.observe(lambda _: self._reopen(), names="value")
            pickers.append(self.run_picker)
        hosts = self._pod.hosts if self._pod is not None else next(
            (list(h) for r, h in zip(runs["run"], runs["hosts"], strict=True)
             if r == self.profile.run), self.profile.hosts)
        if (self._path is not None or self._pod is not None) and len(hosts) > 1:
            chosen = self.profile.hosts
            self.host_picker = ipywidgets.Dropdown(
                options=[ALL_HOSTS, *hosts],
                value=ALL_HOSTS if len(chosen) == len(hosts) else chosen[0], description="Host")
            self.host_picker.observe(lambda _: self._reopen(), names="value")
            pickers.append(self.host_picker)
        return ipywidgets.HBox(pickers) if pickers else None

    def _lay_out(self) -> None:
        self._offered = registry.offered(self.profile)
        self.tabs = _titled_tabs([ipywidgets.HTML() for _ in self._offered],
                                 [t.title for t in self._offered])
        self.tabs.observe(self._on_tab, names="selected_index")
        header = self._header()
        self.children = [header, self.tabs] if header else [self.tabs]

    def _reopen(self) -> None:
        with self._making:
            run = self.run_picker.value if self.run_picker else self.profile.run
            host = self.host_picker
            same_run = run == self.profile.run
            chosen = None if host is None or host.value == ALL_HOSTS or not same_run else host.value
            current = self.tab_keys[self.tabs.selected_index or 0]
            if self._pod is not None:
                self.profile = self._pod if chosen is None else self._pod.select(chosen)
            else:
                self.profile = open_profile(self._path, run=run, host=chosen)
            self._tools.clear()
            self._lay_out()  # the new run may have other hosts, and other tools
            self.show(current if current in self.tab_keys else self.tab_keys[0])


def _empty_state(title: str, text: str) -> ipywidgets.HTML:
    """A tab that must say no, in the look of the views' own empty state (js/src/lib/empty.js),
    from JupyterLab's theme variables; the text is escaped (it carries paths and names)."""
    box = ("margin:12px;padding:10px 12px;border-left:3px solid var(--jp-border-color1,#bdbdbd);"
           "background:var(--jp-layout-color1,#fafafa);color:var(--jp-ui-font-color1,#212121);"
           "line-height:18px;max-width:120ch;white-space:pre-wrap;overflow-wrap:anywhere")
    return ipywidgets.HTML(f'<div class="xw-empty" style="{box}"><b style="display:block">'
                           f"{html.escape(title)}</b>{html.escape(text)}</div>")


def _titled_tabs(children: list, titles: list[str]) -> ipywidgets.Tab:
    """Tabs with titles on ipywidgets 8 (a `titles` trait) and 7 (Colab's: `set_title` only)."""
    tabs = ipywidgets.Tab(children=children)
    tabs.add_class("xw-suite-tabs")  # whole titles: js/src/lib/theme.js sizes these tabs
    if tabs.has_trait("titles"):
        tabs.titles = tuple(titles)
    else:
        for index, title in enumerate(titles):
            tabs.set_title(index, title)
    return tabs
