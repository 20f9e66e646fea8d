"""The Graph Viewer's neighbourhood against XProf's `graph_viewer` (type=graph, format=dot), live,
on every XSpace fixture with HLO protos: a few ops per module (the entry's root, its first
fusion, a middle instruction, a fused instruction), width 1 to 3, fusions merged and expanded.

XProf's DOT is read for the instructions it draws (the name in each node's label) and the
fusions it expands (its "Fused expression for" clusters), each with the cluster it sits in. Ours
are `nodes()`. Parameters are set aside (XProf labels them "Parameter N", not by name), and the
differences we chose (docs/from_xprof.md, "Graph Viewer") are applied to our side as rules:

- CONSTANTS_INLINE: XProf draws no node for a constant (other than a computation's root) or a
  fused broadcast of a scalar constant; it prints them inside their users' labels. We list them.
- GTE_ON_EDGES: XProf folds a get-tuple-element (other than a root) into its users' edges;
  we list it as an instruction.
- NO_PROGRAM_SHAPE: XProf refuses a module whose proto has no program shape ("No program shape
  found in the proto"): our synthetic profiles' modules. We draw them; there the test asserts
  XProf's refusal and that our neighbourhood holds the op.
- FUSIONS_ONLY: XProf also draws the non-fusion computations an op calls (a reduce's or sort's
  body, a while's, a call's) as clusters; we draw only fusions' bodies. Instructions in such
  clusters are left out of XProf's side.
"""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
from pathlib import Path

import fixture_files
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis import graph

pytest.importorskip("xprof.convert.raw_to_tool_data")

WIDTHS = (1, 2, 3)
_NODE = re.compile(r"^(\S+) \[label=<(.*)>, shape=")
_CLUSTER = re.compile(r"^label = <(Fused expression|Subcomputation) for <b>(.*?)</b>")


@functools.cache
def _profile(path: str) -> xw.Profile:
    return xw.open_profile(path)


def _with_hlo() -> list[Path]:
    return [p for p in fixture_files.XSPACE if len(_profile(str(p)).hlo_modules)]


@functools.cache
def _session(path: str) -> str:
    """A TensorBoard run directory holding a copy of the file, its HLO protos extracted once."""
    from xprof.convert import raw_to_tool_data

    run_dir = Path(tempfile.mkdtemp(prefix="graph_parity_")) / "plugins" / "profile" / "run"
    run_dir.mkdir(parents=True)
    copy = run_dir / Path(path).name
    shutil.copyfile(path, copy)
    raw_to_tool_data.xspace_to_tool_names([str(copy)])
    return str(copy)


def _xprof_dot(path: str, module: str, op: str, width: int, merge: bool) -> str:
    from xprof.convert import raw_to_tool_data

    options = {"type": "graph", "format": "dot", "node_name": op, "graph_width": width,
               "merge_fusion": int(merge), "module_name": module}
    data, _ = raw_to_tool_data.xspace_to_tool_data([_session(path)], "graph_viewer",
                                                   {"graph_viewer_options": options})
    return data.decode() if isinstance(data, bytes) else str(data)


def _unescape(text: str) -> str:
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&amp;", "&"))


def xprof_drawn(dot: str, names: set[str]) -> tuple[set[tuple[str, str | None]], set[str]]:
    """((instruction, fusion cluster it sits in) drawn, fusions expanded) from XProf's DOT,
    leaving out instructions inside non-fusion subcomputation clusters."""
    drawn, expanded = set(), set()
    stack: list[tuple[str, str | None]] = []  # (kind, fusion name) of open clusters
    for line in dot.splitlines():
        if line.startswith("subgraph cluster_"):
            stack.append(("pending", None))
            continue
        if line.startswith("}") and stack:
            stack.pop()
            continue
        found = _CLUSTER.match(line)
        if found and stack and stack[-1][0] == "pending":
            kind = "fusion" if found.group(1) == "Fused expression" else "call"
            name = _unescape(found.group(2))
            stack[-1] = (kind, name)
            if kind == "fusion" and all(k == "fusion" for k, _ in stack):
                expanded.add(name)
            continue
        node = _NODE.match(line)
        if node is None or node.group(1).startswith("cluster_"):
            continue
        parts = [_unescape(re.sub(r"</?b>", "", p)) for p in node.group(2).split("<br/>")]
        name = next((p for p in parts[:2] if p in names), None)
        if name is None or any(k != "fusion" for k, _ in stack):
            continue  # a parameter ("Parameter 0"), or inside a called computation
        drawn.add((name, stack[-1][1] if stack else None))
    return drawn, expanded


def ours_drawn(nb: graph.Neighbourhood) -> tuple[set[tuple[str, str | None]], set[str]]:
    """Our nodes with the chosen differences applied (see the module docstring)."""
    nodes = nb.nodes()
    names = dict(zip(nodes["name"], nodes["opcode"], strict=True))
    roots = _roots(nb)
    drawn, expanded = set(), set()
    for row in nodes.itertuples(index=False):
        if row.expanded:
            expanded.add(row.name)
            continue
        if row.opcode == "parameter":
            continue
        if row.opcode == "constant" and row.name not in roots:  # CONSTANTS_INLINE
            continue
        if row.opcode == "broadcast" and row.computation in _fusion_bodies(nb.graph) \
                and _of_constant(nb, row.name):
            continue  # CONSTANTS_INLINE: a fused broadcast of a scalar constant
        if row.opcode == "get-tuple-element" and row.name not in roots:  # GTE_ON_EDGES
            continue
        drawn.add((row.name, row.fusion))
    assert set(names) >= {n for n, _ in drawn}
    return drawn, expanded


def _roots(nb: graph.Neighbourhood) -> set[str]:
    roots = set()
    for name in set(nb.nodes()["computation"]):
        comp = next(c for c in nb.graph.computations() if c.name == name)
        if comp.root >= 0:
            roots.add(comp.names[comp.root])
    return roots


@functools.cache
def _fusion_bodies(g: graph.ModuleGraph) -> set[str]:
    """Names of the computations fusion instructions call."""
    bodies = set()
    for comp in g.computations():
        for k, called in comp.called.items():
            body = g.computation_by_id(called[0])
            if comp.opcodes[k] == "fusion" and body is not None:
                bodies.add(body.name)
    return bodies


def _of_constant(nb: graph.Neighbourhood, name: str) -> bool:
    found = nb.graph.find(name)
    assert found is not None
    comp, k = found
    ops = comp.operands(k).tolist()
    return len(ops) == 1 and ops[0] >= 0 and comp.opcodes[ops[0]] == "constant" \
        and not len(comp.proto.instructions[ops[0]].shape.dimensions)


def _ops_of(g: graph.ModuleGraph, entry_name: str) -> list[str]:
    """The entry's root, its first fusion, a middle instruction, and one fused instruction."""
    entry = next(c for c in g.computations() if c.name == entry_name)
    picks = [entry.names[entry.root], entry.names[len(entry.names) // 2]]
    fusions = [k for k, op in enumerate(entry.opcodes) if op == "fusion"]
    if fusions:
        picks.append(entry.names[fusions[0]])
        body = g.computation_by_id(entry.called[fusions[0]][0])
        if body is not None and body.root >= 0:
            picks.append(body.names[body.root])
    return list(dict.fromkeys(picks))


def _cases() -> list:
    cases = []
    for path in _with_hlo():
        profile = _profile(str(path))
        for label in profile.hlo_modules["label"]:
            g = graph.module_graph(profile, label)
            entry_name = profile.hlo_proto(g.program_id).hlo_module.entry_computation_name
            for op in _ops_of(g, entry_name):
                cases.append(pytest.param(str(path), label, op,
                                          id=f"{path.name}-{label}-{op}"))
    return cases


@pytest.mark.parametrize(("path", "module", "op"), _cases())
def test_same_neighbourhood_as_xprof(path: str, module: str, op: str) -> None:
    profile = _profile(path)
    g = graph.module_graph(profile, module)
    names = {n for c in g.computations() for n in c.names}
    if Path(path).name.startswith("synthetic_"):  # NO_PROGRAM_SHAPE
        with pytest.raises(ValueError, match="No program shape found in the proto"):
            _xprof_dot(path, module, op, 1, True)
        nodes = graph.neighbourhood(profile, op, module, 2, False).nodes()
        assert op in set(nodes["name"])
        return
    for merge in (True, False):
        for width in WIDTHS:
            dot = _xprof_dot(path, module, op, width, merge)
            theirs, their_fusions = xprof_drawn(dot, names)
            nb = graph.neighbourhood(profile, op, module, width, merge)
            ours, our_fusions = ours_drawn(nb)
            where = f"{module} {op} width={width} merge_fusion={merge}"
            assert ours == theirs, (f"{where}: only ours {sorted(ours - theirs, key=str)}, "
                                    f"only XProf's {sorted(theirs - ours, key=str)}")
            assert our_fusions == their_fusions, where


def test_op_alone_finds_the_module_xprof_finds() -> None:
    """With no module named, XProf finds the op's module by its name; so do we (the first
    module holding it): both draw the same neighbourhood."""
    path = str(fixture_files.DATA / "tpu_v6e_inference.xplane.pb")
    profile = _profile(path)
    from xprof.convert import raw_to_tool_data

    options = {"type": "graph", "format": "dot", "node_name": "broadcast_add_fusion.2",
               "graph_width": 2, "merge_fusion": 1}
    data, _ = raw_to_tool_data.xspace_to_tool_data([_session(path)], "graph_viewer",
                                                   {"graph_viewer_options": options})
    nb = graph.neighbourhood(profile, "broadcast_add_fusion.2", width=2)
    names = {n for c in nb.graph.computations() for n in c.names}
    assert ours_drawn(nb)[0] == xprof_drawn(data.decode(), names)[0]
    assert nb.graph.label.startswith("jit_f(")
