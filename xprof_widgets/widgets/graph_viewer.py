"""`GraphViewer`: XProf's Graph Viewer in a notebook cell, the HLO graph around one op.

The widget syncs the module, the op, the width (hops from the op) and the fusion and metadata
switches; the view asks for the neighbourhood (nodes, edges, each node's HLO line), lays it out
top to bottom with dagre and draws it as SVG. Setting a trait from Python redraws the view.

    g = xw.GraphViewer("/logs/run", op="fusion.12", width=3)
    g.nodes()                        # the instructions drawn, with the Op Profile's numbers
    g.edges(); g.to_dot(); g.hlo_text(long=True)
    g.op = "convolution.3"           # the view follows
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.graph import (
    DOWNLOADS,
    Neighbourhood,
    find_module,
    instruction_text,
    module_download,
    module_graph,
    neighbourhood,
    op_metrics,
)
from ..analysis.source import op_stack, op_stacks, source_answer, stack_text
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, handler
from .graph_wire import encode_graph

MAX_WIDTH = 10
MAX_DRAWN = 30_000
"""Most instructions the view draws: laid out in a Web Worker (dagre up to 400 nodes, a layered
layout of our own beyond) and drawn in batches, a graph this large takes seconds; beyond it the
SVG alone would take the page's memory (docs/graph_viewer.md, Scale)."""
HLO_INLINE = 2_000
"""Most nodes whose HLO lines ride in the graph reply; a larger graph's card asks for its node's
line (a whole module's lines are half its reply's bytes, and a card shows one at a time)."""
SEARCH_HITS = 20


class GraphViewer(RequestWidget):
    """The HLO graph around an op: its operands and users `width` hops out, fusions merged into
    one node or expanded into clusters, coloured by share of device time.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`.
        op: the instruction to centre on (default: the module's longest-running op, else the
            entry computation's root).
        module: the HLO module, as XProf names it (`jit_update(26)`), by name or program id
            (default: the module holding `op`, else the one with the most device time).
        width: hops from the op, operands and users (a bitcast costs none, as in XLA).
        merge_fusions: draw a fusion as one node (True) or as a cluster of its body (False).
        show_metadata: node labels show each op's framework op name and source line.
        whole_module: draw every instruction of the op's computation, fusions merged.
        run, host: which run and host(s) to open.
    """

    _bundle = "graph_viewer.js"

    module = traitlets.Unicode("", help="The HLO module (XProf's label, `name(program_id)`)."
                               ).tag(sync=True)
    op = traitlets.Unicode("", help="The instruction the graph is centred on.").tag(sync=True)
    width = traitlets.Int(2, help=f"Hops from the op, 0..{MAX_WIDTH}.").tag(sync=True)
    merge_fusions = traitlets.Bool(True, help="Fusions as single nodes (False: clusters of their "
                                   "fused computations).").tag(sync=True)
    show_metadata = traitlets.Bool(False, help="Labels show op names and source lines."
                                   ).tag(sync=True)
    whole_module = traitlets.Bool(False, help="Draw every instruction of the op's computation "
                                  "(fusions merged) instead of its neighbourhood.").tag(sync=True)
    toggled_fusions = traitlets.List(traitlets.Unicode(), help="Fusions drawn the other way "
                                     "from merge_fusions (the view's expand / collapse of one "
                                     "fusion); cleared when the op, module or switch changes."
                                     ).tag(sync=True)
    _modules = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, op: str | None = None,
                 module: int | str | None = None, width: int = 2, merge_fusions: bool = True,
                 show_metadata: bool = False, whole_module: bool = False,
                 run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        labels = [str(x) for x in profile.hlo_modules["label"]]
        error, label, centre = "", "", ""
        try:
            if not labels:
                raise ProfileError(f"{profile.source}: the profile carries no HLO protos, so "
                                   "there is no graph to draw (XProf offers no Graph Viewer "
                                   "then either).")
            if module is not None:
                label = module_graph(profile, module).label
            elif op:
                label = find_module(profile, op)
            else:
                label = _busiest_module(profile, labels)
            centre = op or default_op(profile, label)
        except ProfileError as exc:
            error = str(exc)
        super().__init__(module=label, op=centre, width=width, merge_fusions=merge_fusions,
                         show_metadata=show_metadata, whole_module=whole_module, _modules=labels, _error=error, **kwargs)
        self.profile = profile

    @traitlets.validate("width")
    def _check_width(self, proposal: dict) -> int:
        return int(min(MAX_WIDTH, max(0, proposal["value"])))

    # ---- pandas face --------------------------------------------------------------------------
    def neighbourhood(self) -> Neighbourhood:
        """The graph drawn now (module, op, width, fusions as the traits say)."""
        if self._error:
            raise ProfileError(self._error)
        return neighbourhood(self.profile, self.op, self.module, self.width, self.merge_fusions,
                             frozenset(self.toggled_fusions), self.whole_module)

    def nodes(self) -> pd.DataFrame:
        """One row per instruction drawn; see `Neighbourhood.nodes`. `source` is the innermost
        frame, `source_stack` every frame (`file:line` per line, innermost first)."""
        nodes = self.neighbourhood().nodes()
        stacks = op_stacks(self.profile, self.module, nodes["name"].tolist())
        nodes["source_stack"] = [stack_text(frames) for frames in stacks]
        return nodes

    to_dataframe = nodes

    def edges(self) -> pd.DataFrame:
        """One row per operand edge drawn: source, target, operand_index, shape."""
        return self.neighbourhood().edges()

    def to_dot(self) -> str:
        """The graph drawn now as Graphviz DOT (what the view's DOT button saves)."""
        return self.neighbourhood().to_dot()

    def hlo_text(self, long: bool = False) -> str:
        """The drawn instructions as HLO text; `long` adds their metadata."""
        return self.neighbourhood().hlo_text(long)

    def download(self, kind: str = "pb") -> bytes | str:
        """The module's HLO as XProf's Graph Viewer downloads it: `pb` (the serialized
        HloProto, the profile's own bytes), `pbtxt` (its protobuf text format), `short_txt` /
        `long_txt` (the module's HLO text without / with metadata)."""
        if self._error:
            raise ProfileError(self._error)
        return module_download(self.profile, self.module, kind)

    def show(self, op: str, module: int | str | None = None) -> None:
        """Centres the graph on `op` (of `module`, or of the module holding it)."""
        if module is not None:
            graph = module_graph(self.profile, module)
            if op not in graph:
                raise ProfileError(f"module {graph.label} has no instruction named {op!r}.")
            label = graph.label
        elif self.module and op in module_graph(self.profile, self.module):
            label = self.module
        else:
            label = find_module(self.profile, op)
        with self.hold_sync():
            self.module, self.op = label, op

    # ---- requests from the view ---------------------------------------------------------------
    @traitlets.observe("op", "module", "merge_fusions")
    def _untoggle(self, _change: dict) -> None:
        self.toggled_fusions = []

    @handler("graph")
    def _graph(self, module: str, op: str, width: int, merge_fusions: bool,
               show_metadata: bool, toggled_fusions: list | None = None,
               whole_module: bool = False) -> dict | tuple[dict, list[bytes]]:
        """The graph in binary columns (graph_wire.py), or {problem} when there is none."""
        try:
            nb = neighbourhood(self.profile, op, module, int(min(MAX_WIDTH, max(0, width))),
                               bool(merge_fusions), frozenset(toggled_fusions or ()),
                               bool(whole_module))
        except ProfileError as exc:
            return {"problem": str(exc)}
        nodes = nb.nodes()
        if len(nodes) > MAX_DRAWN:
            where = (f"computation {nb.computation}" if whole_module
                     else f"{width} hops of {op}")
            return {"problem": f"{len(nodes):,} instructions lie within {where}: more than the "
                               f"view draws ({MAX_DRAWN:,}). Lower the width or merge fusions; "
                               "nodes() lists them all."}
        header, buffers = graph_reply(nb, bool(show_metadata))
        return {"module": nb.graph.label, "op": op, "computation": nb.computation,
                "whole": nb.whole, **header}, buffers

    @handler("download")
    def _download(self, module: str, kind: str) -> tuple[dict, list]:
        data = module_download(self.profile, module, kind)
        name = f"{module_graph(self.profile, module).label}.{DOWNLOADS[kind]}"
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        return {"name": name, "binary": kind == "pb"}, [raw]

    @handler("source")
    def _source(self, module: str, op: str, frame: int = 0) -> dict:
        """The op's source stack and the lines around one frame (the profile names the file:
        the view cannot ask for any other)."""
        return source_answer(op_stack(self.profile, module, op), frame)

    @handler("hlo")
    def _hlo(self, module: str, name: str, long: bool) -> dict:
        """One instruction's HLO line (a large graph's reply leaves them out)."""
        graph = module_graph(self.profile, module)
        found = graph.find(name)
        if found is None:
            return {"problem": f"module {graph.label} has no instruction named {name!r}."}
        return {"line": instruction_text(graph, *found, long=bool(long))}

    @handler("default_op")
    def _default_op(self, module: str) -> dict:
        return {"op": default_op(self.profile, module)}

    @handler("search")
    def _search(self, module: str, text: str) -> dict:
        """Instruction names of the module matching `text` (a substring, any case)."""
        graph = module_graph(self.profile, module)
        needle = text.lower()
        names = [n for c in graph.computations() for n in c.names if needle in n.lower()]
        names.sort(key=lambda n: (n.lower() != needle, not n.lower().startswith(needle), len(n)))
        return {"names": names[:SEARCH_HITS]}

    @handler("text")
    def _text(self, module: str, op: str, width: int, merge_fusions: bool, long: bool,
              toggled_fusions: list | None = None, whole_module: bool = False) -> dict:
        nb = neighbourhood(self.profile, op, module, int(width), bool(merge_fusions),
                           frozenset(toggled_fusions or ()), bool(whole_module))
        return {"text": nb.hlo_text(bool(long))}

    @handler("dot")
    def _dot(self, module: str, op: str, width: int, merge_fusions: bool,
             toggled_fusions: list | None = None, whole_module: bool = False) -> dict:
        nb = neighbourhood(self.profile, op, module, int(width), bool(merge_fusions),
                           frozenset(toggled_fusions or ()), bool(whole_module))
        return {"dot": nb.to_dot()}

    def __repr__(self) -> str:
        if self._error:
            return f"<GraphViewer {self.profile.source!r}: {self._error}>"
        return (f"<GraphViewer {self.module} op={self.op!r} width={self.width} "
                f"merge_fusions={self.merge_fusions}>")


def graph_reply(nb: Neighbourhood, long: bool = False) -> tuple[dict, list[bytes]]:
    """(header, buffers) of the view's graph: rows, edges and (up to HLO_INLINE nodes) each
    node's HLO line, `long` with metadata, in binary columns (graph_wire.py)."""
    nodes = nb.nodes()
    hlo = nb.hlo_lines(long) if len(nodes) <= HLO_INLINE else [None] * len(nodes)
    return encode_graph(nodes, nb.edges(), hlo)


def default_op(profile: Any, module: str) -> str:
    """The op to centre on in a module: its longest-running op, else its entry's root."""
    graph = module_graph(profile, module)
    metrics, _, _ = profile.memo(("graph_metrics", graph.program_id),
                                 lambda: op_metrics(profile, graph.program_id))
    if metrics is not None and len(metrics):
        timed = metrics[np.isfinite(metrics["time_us"].to_numpy(float))]
        for name in timed.sort_values("time_us", ascending=False)["name"]:
            if name in graph:
                return str(name)
    entry = graph.entry()
    return entry.names[entry.root] if entry.root >= 0 else entry.names[-1]


def _busiest_module(profile: Any, labels: list[str]) -> str:
    """The module with the most device time in the Op Profile, else the first."""
    best, best_time = labels[0], -math.inf
    for label in labels:
        graph = module_graph(profile, label)
        metrics, _, _ = profile.memo(("graph_metrics", graph.program_id),
                                     lambda g=graph: op_metrics(profile, g.program_id))
        total = float(np.nansum(metrics["time_us"])) if metrics is not None else 0.0
        if total > best_time:
            best, best_time = label, total
    return best


__all__ = ["GraphViewer", "default_op", "graph_reply"]
