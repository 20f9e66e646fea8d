"""The Graph Viewer's neighbourhood walk, fusion clusters, texts and widget.

The walk is XLA's (`MakeNodeRadiusAroundFilter`), checked here on small hand-made modules; the
differential test (tests/differential/test_graph_viewer_parity.py) compares it with XProf live.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis import graph
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile.schema import HloProto
from xprof_widgets.widgets._base import STATIC_DIR

ROOT = Path(__file__).resolve().parents[2]
TPU = ROOT / "tests/data/tpu_v6e_inference.xplane.pb"
TF_CPU = ROOT / "tests/data/tf_keras_cpu_fast.xplane.pb"


@pytest.fixture(autouse=True)
def bundle(monkeypatch):
    if not (STATIC_DIR / "graph_viewer.js").exists():
        from xprof_widgets.widgets import graph_viewer

        monkeypatch.setattr(graph_viewer.GraphViewer, "_esm", "export default {}")


def module_of(entry: list[tuple], fused: dict[str, list[tuple]] | None = None
              ) -> graph.ModuleGraph:
    """A module from (name, opcode, operand names[, fused computation]) rows; the last row of a
    computation is its root. Fused computations' parameters take their number from the order."""
    proto = HloProto()
    module = proto.hlo_module
    module.name = "m"
    ids: dict[str, int] = {}
    comp_ids: dict[str, int] = {}
    for c, (comp_name, rows) in enumerate([*(fused or {}).items(), ("main", entry)], start=1):
        comp = module.computations.add(name=comp_name, id=c)
        comp_ids[comp_name] = c
        params = 0
        for row in rows:
            name, opcode, operands = row[:3]
            ins = comp.instructions.add(name=name, opcode=opcode, id=len(ids) + 1)
            ids[name] = ins.id
            ins.shape.element_type = 11  # f32
            ins.shape.dimensions.append(8)
            ins.operand_ids.extend(ids[o] for o in operands)
            if opcode == "parameter":
                ins.parameter_number = params
                params += 1
            if len(row) > 3:
                ins.called_computation_ids.append(comp_ids[row[3]])
                ins.fusion_kind = "kLoop"
        comp.root_id = ids[rows[-1][0]]
    module.entry_computation_id = comp_ids["main"]
    data = proto.SerializeToString()
    return graph.ModuleGraph(HloProto.FromString(data), data, 7, "m(7)")


def distances(g: graph.ModuleGraph, op: str, width: int, merge: bool = True) -> dict[str, int]:
    nodes = graph.Neighbourhood(g, op, width, merge).nodes()
    return dict(zip(nodes["name"], nodes["distance"].tolist(), strict=True))


def test_the_walk_follows_operands_and_users_width_hops():
    g = module_of([("p", "parameter", []), ("a", "negate", ["p"]), ("b", "exponential", ["a"]),
                   ("c", "log", ["b"]), ("d", "add", ["c", "c"])])
    assert distances(g, "b", 1) == {"a": 1, "b": 0, "c": 1}
    assert distances(g, "b", 2) == {"p": 2, "a": 1, "b": 0, "c": 1, "d": 2}
    assert distances(g, "b", 0) == {"b": 0}


def test_a_bitcast_costs_no_hop():
    """Into or out of a bitcast, as operand or as the op walked from: no hop."""
    g = module_of([("p", "parameter", []), ("a", "negate", ["p"]), ("bc", "bitcast", ["a"]),
                   ("b", "exponential", ["bc"])])
    assert distances(g, "b", 1) == {"p": 1, "a": 0, "bc": 0, "b": 0}


def test_tuples_constants_and_busy_ops_stop_the_walk():
    users = [(f"u{i}", "negate", ["busy"]) for i in range(17)]
    g = module_of([("k", "constant", []), ("x", "add", ["k", "k"]), ("y", "multiply", ["k", "x"]),
                   ("busy", "negate", ["y"]), *users,
                   ("t", "tuple", ["x", "y"]), ("after", "get-tuple-element", ["t"])])
    # A constant's users are not walked to: from k only k itself.
    assert distances(g, "k", 3) == {"k": 0}
    # The tuple (not the op) is not walked into: from `after`, t but not its operands.
    assert distances(g, "after", 3) == {"t": 1, "after": 0}
    # The op's own tuple is walked into.
    assert set(distances(g, "t", 1)) == {"x", "y", "t", "after"}
    # More than 16 users: none walked to.
    assert distances(g, "busy", 1) == {"y": 1, "busy": 0}
    assert len(distances(g, "busy", 1)) == 2 and len(users) > graph.MAX_USERS_WALKED


FUSED = {"fused_computation": [("param_0", "parameter", []), ("param_1", "parameter", []),
                               ("mul", "multiply", ["param_0", "param_1"]),
                               ("neg", "negate", ["mul"])]}
ENTRY = [("p", "parameter", []), ("q", "parameter", []), ("a", "exponential", ["p"]),
         ("f", "fusion", ["a", "q"], "fused_computation"), ("out", "log", ["f"])]


def test_expanded_fusion_is_a_cluster_wired_through_its_parameters_and_root():
    g = module_of(ENTRY, FUSED)
    nb = graph.Neighbourhood(g, "f", 1, merge_fusions=False)
    nodes = nb.nodes().set_index("name")
    assert nodes.loc["f", "expanded"] and nodes.loc["f", "fusion"] is None
    assert nodes.loc[["param_0", "param_1", "mul", "neg"], "fusion"].tolist() == ["f"] * 4
    edges = {tuple(r) for r in nb.edges()[["source", "target", "operand_index"]].to_numpy()}
    assert edges == {("a", "param_0", 0), ("q", "param_1", 1), ("param_0", "mul", 0),
                     ("param_1", "mul", 1), ("mul", "neg", 0), ("neg", "out", 0)}
    merged = graph.Neighbourhood(g, "f", 1, merge_fusions=True)
    assert set(merged.nodes()["name"]) == {"a", "q", "f", "out"}
    assert {tuple(r) for r in merged.edges()[["source", "target"]].to_numpy()} == {
        ("a", "f"), ("q", "f"), ("f", "out")}


def test_one_fusion_drawn_the_other_way():
    g = module_of(ENTRY, FUSED)
    nodes = graph.Neighbourhood(g, "out", 1, True, toggled=frozenset({"f"})).nodes()
    assert nodes.set_index("name").loc["f", "expanded"] and "neg" in set(nodes["name"])
    nodes = graph.Neighbourhood(g, "f", 1, False, toggled=frozenset({"f"})).nodes()
    assert set(nodes["name"]) == {"a", "q", "f", "out"}


def test_a_fusion_at_the_edge_stays_merged():
    """A fusion whose operands are not all shown is not expanded (as XLA draws it)."""
    g = module_of(ENTRY, FUSED)
    nodes = graph.Neighbourhood(g, "out", 1, merge_fusions=False).nodes().set_index("name")
    assert not nodes.loc["f", "expanded"] and "mul" not in nodes.index
    nodes = graph.Neighbourhood(g, "out", 2, merge_fusions=False).nodes().set_index("name")
    assert nodes.loc["f", "expanded"] and nodes.loc["neg", "fusion"] == "f"


def test_texts_name_the_clusters_and_the_root():
    g = module_of(ENTRY, FUSED)
    nb = graph.Neighbourhood(g, "f", 1, merge_fusions=False)
    dot = nb.to_dot()
    assert 'subgraph "cluster_f"' in dot and '"neg" -> "out"' in dot and dot.startswith("digraph")
    text = nb.hlo_text()
    assert "%fused_computation {" in text and "ROOT %neg = f32[8] negate(f32[8] %mul)" in text
    assert "%f = f32[8] fusion(f32[8] %a, f32[8] %q), kind=kLoop, calls=%fused_computation" in text
    with pytest.raises(ProfileError, match="no instruction named 'nope'"):
        graph.Neighbourhood(g, "nope", 1)


def test_numbers_are_the_op_profiles():
    profile = xw.open_profile(str(TPU))
    nb = graph.neighbourhood(profile, "broadcast_add_fusion.2", width=2)
    assert nb.graph.label == "jit_f(12190760917235803885)"
    ops = analyze_op_profile(profile).ops
    row = ops[ops["name"] == "broadcast_add_fusion.2"].iloc[0]
    node = nb.nodes().set_index("name").loc["broadcast_add_fusion.2"]
    assert node["time_us"] == row["time_us"] and node["flops"] == row["flops"]
    assert node["bytes_accessed"] == row["bytes_accessed"]
    assert np.isclose(node["time_share"], row["time_ps"] / analyze_op_profile(profile).total_time_ps)
    assert node["source"].endswith("host_offload_stress_test.py:29")


def decoded(header: dict, buffers: list[bytes]) -> dict:
    """The graph reply's binary columns (widgets/graph_wire.py) read back as lists, as the
    view's wire.js reads them: {whole, nodes: {column: [...]}, edges: {...}, hlo: [...]}."""
    text = buffers[0].decode("utf-8").encode("utf-16-le")
    ends = np.frombuffer(buffers[1], "<i4")
    starts = np.concatenate([[0], ends[:-1]])
    table = [text[2 * a:2 * b].decode("utf-16-le") for a, b in zip(starts, ends, strict=True)]
    n, m, cols = header["nodes"], header["edges"], header["columns"]
    word = lambda i: None if i < 0 else table[i]
    strings = np.frombuffer(buffers[2], "<i4").reshape(len(cols["text"]), n)
    numbers = np.frombuffer(buffers[3], "<f8").reshape(len(cols["numbers"]), n)
    ints = np.frombuffer(buffers[4], "<i4").reshape(len(cols["ints"]), n)
    nodes = {c: [word(i) for i in strings[j]] for j, c in enumerate(cols["text"])}
    nodes.update({c: numbers[j].tolist() for j, c in enumerate(cols["numbers"])})
    nodes.update({c: ints[j].tolist() for j, c in enumerate(cols["ints"])})
    e = np.frombuffer(buffers[5], "<i4").reshape(4, m) if m else np.zeros((4, 0), int)
    edges = {"source": [nodes["name"][r] for r in e[0]], "target": [nodes["name"][r] for r in e[1]],
             "operand_index": e[2].tolist(), "shape": [word(i) for i in e[3]]}
    return {"whole": header.get("whole"), "hlo": nodes.pop("hlo"), "nodes": nodes, "edges": edges}


def test_the_graph_reply_is_binary_columns_equal_to_the_frames():
    g = xw.GraphViewer(str(TPU), op="broadcast_add_fusion.2", merge_fusions=False, width=2)
    header, buffers = g._graph(g.module, g.op, 2, False, True)
    assert all(isinstance(b, bytes) for b in buffers) and len(header) < 12  # no rows in JSON
    answer = decoded(header, buffers)
    nb = g.neighbourhood()
    frame, edges = nb.nodes(), nb.edges()
    for column in ("name", "opcode", "shape", "source", "op_name", "distance"):
        assert answer["nodes"][column] == frame[column].tolist(), column
    assert answer["nodes"]["fusion"] == [None if f is None else f for f in frame["fusion"]]
    assert [bool(x) for x in answer["nodes"]["expanded"]] == frame["expanded"].tolist()
    np.testing.assert_array_equal(answer["nodes"]["time_us"], frame["time_us"].to_numpy(float))
    assert any(f is not None for f in answer["nodes"]["fusion"])  # clusters are in the reply
    assert answer["hlo"] == nb.hlo_lines(long=True)
    assert answer["edges"] == {c: edges[c].tolist() for c in edges.columns}


def test_a_large_graph_reply_leaves_hlo_lines_to_the_card(monkeypatch):
    from xprof_widgets.widgets import graph_viewer

    g = xw.GraphViewer(str(TPU), op="broadcast_add_fusion.2", width=2)
    lines = g.neighbourhood().hlo_lines(long=True)
    monkeypatch.setattr(graph_viewer, "HLO_INLINE", len(lines) - 1)
    answer = decoded(*g._graph(g.module, g.op, 2, True, True))
    assert answer["hlo"] == [None] * len(lines)
    names = answer["nodes"]["name"]
    assert [g._hlo(g.module, name, True)["line"] for name in names] == lines
    assert "no instruction named" in g._hlo(g.module, "nope", False)["problem"]


def test_the_string_table_cuts_at_utf16_ends_as_javascript_slices():
    import pandas as pd

    from xprof_widgets.widgets.graph_wire import encode_graph

    nodes = pd.DataFrame({"name": ["a.1", "b.2"], "opcode": ["add", "add"], "shape": ["f32[]"] * 2,
                          "fusion": [None, None], "source": ["π.py:3", "\U0001d70b.py:4"],
                          "op_name": ["", "jit(f)/é"], "time_us": [1.0, np.nan],
                          "time_share": [0.5, np.nan], "flops": [np.nan] * 2,
                          "bytes_accessed": [np.nan] * 2, "distance": [0, 1],
                          "expanded": [False, False]})
    edges = pd.DataFrame({"source": ["a.1"], "target": ["b.2"], "operand_index": [0],
                          "shape": ["f32[]"]})
    answer = decoded(*encode_graph(nodes, edges, ["%a.1 = f32[] add()", "%b.2 = é"]))
    assert answer["nodes"]["source"] == ["π.py:3", "\U0001d70b.py:4"]
    assert answer["nodes"]["op_name"] == ["", "jit(f)/é"] and answer["hlo"][1] == "%b.2 = é"
    assert answer["edges"]["source"] == ["a.1"] and answer["edges"]["shape"] == ["f32[]"]


def test_widget_on_the_tpu_fixture(monkeypatch):
    from xprof_widgets.widgets import graph_viewer

    g = xw.GraphViewer(str(TPU))
    assert g.module == "jit_f(12190760917235803885)" and g.op  # the busiest module and op
    g.show("copy-done.1")
    assert g.op == "copy-done.1"
    answer = decoded(*g._graph(g.module, "broadcast_add_fusion.2", 2, False, True))
    assert "broadcast_add_fusion.2" in answer["nodes"]["name"]
    assert len(answer["hlo"]) == len(answer["nodes"]["name"])
    assert set(answer["edges"]) == {"source", "target", "operand_index", "shape"}
    assert "problem" in g._graph(g.module, "nope", 2, True, False)
    monkeypatch.setattr(graph_viewer, "MAX_DRAWN", 3)
    assert "more than the view draws" in g._graph(g.module, "copy-done.1", 2, True, False)[
        "problem"]
    assert g._search(g.module, "COPY-DONE.1")["names"][0] == "copy-done.1"
    assert g._text(g.module, "copy-done.1", 1, True, False)["text"].startswith("%")
    g.width = 99
    assert g.width == 10
    g.op, g.merge_fusions = "broadcast_add_fusion.2", True
    g.toggled_fusions = ["broadcast_add_fusion.2"]
    assert g.nodes().set_index("name").loc["broadcast_add_fusion.2", "expanded"]
    g.merge_fusions = False  # a new graph: every fusion back to the rule
    assert g.toggled_fusions == []


def test_no_hlo_no_graph_and_no_tab():
    g = xw.GraphViewer(str(TF_CPU))
    assert "no HLO protos" in g._error
    with pytest.raises(ProfileError):
        g.nodes()
    assert "graph" not in [t.key for t in tools.offered(xw.open_profile(str(TF_CPU)))]
    assert "graph" in [t.key for t in tools.offered(xw.open_profile(str(TPU)))]


def test_the_suite_opens_an_op_in_the_graph_viewer():
    """An Op Profile card's link ({'tool': 'graph', 'op': ...}) centres the Graph Viewer tab on
    the op; the graph's own links go to the Trace Viewer and the Op Profile."""
    suite = xw.Profiler(str(TPU))
    suite.tool("op").link = {"tool": "graph", "op": "copy-done.1", "at": 1}
    assert suite.tab_keys[suite.tabs.selected_index] == "graph"
    viewer = suite.tool("graph")
    assert viewer.op == "copy-done.1" and viewer.module == "jit_f(12190760917235803885)"
    assert viewer._linked
    suite.tool("op").link = {"tool": "graph", "op": "no-such-op", "at": 2}
    assert viewer.op == "copy-done.1"  # an op no module holds leaves the graph as it was
    # The Memory Viewer's card names its module: the op of that module.
    suite.tool("memory").link = {"tool": "graph", "op": "copy", "at": 3,
                                 "module": "jit_broadcast_in_dim(11287434908481120160)"}
    assert (viewer.module, viewer.op) == ("jit_broadcast_in_dim(11287434908481120160)", "copy")
    viewer.link = {"tool": "op", "op": "copy-done.1", "at": 4}
    assert suite.tab_keys[suite.tabs.selected_index] == "op"
    assert suite.tool("op").name_filter == r"^copy\-done\.1$"


def test_whole_computation_fusions_merged_with_hops_where_the_walk_reaches():
    g = module_of([("k", "constant", []), ("p", "parameter", []), *ENTRY[1:],
                   ("z", "add", ["out", "out"])], FUSED)
    nb = graph.Neighbourhood(g, "a", 1, merge_fusions=False, whole=True)
    nodes = nb.nodes().set_index("name")
    assert list(nodes.index) == ["k", "p", "q", "a", "f", "out", "z"]
    assert not nodes["expanded"].any() and nodes["fusion"].isna().all()
    assert nodes["distance"].to_dict() == {"k": -1, "p": 1, "q": 2, "a": 0, "f": 1, "out": 2,
                                           "z": 3}
    assert len(nb.edges()) == 6  # z reads out twice


def test_downloads_are_the_profiles_proto_its_text_format_and_the_module_text():
    from google.protobuf import text_format

    p = xw.open_profile(str(TPU))
    g = xw.GraphViewer(p, op="broadcast_add_fusion.2")
    pid = graph.module_graph(p, g.module).program_id
    assert g.download("pb") == p.hlo_proto_bytes(pid)
    assert HloProto.FromString(g.download("pb")) == p.hlo_proto(pid)
    parsed = text_format.Parse(g.download("pbtxt"), HloProto())
    declared = HloProto()
    declared.CopyFrom(p.hlo_proto(pid))
    declared.DiscardUnknownFields()  # text format names only the fields the reader declares
    assert parsed == declared and parsed.ByteSize() > 0.5 * len(g.download("pb"))
    short, long = g.download("short_txt"), g.download("long_txt")
    assert short.startswith("HloModule jit_f\n")
    proto = p.hlo_proto(pid).hlo_module
    entry = next(c for c in proto.computations if c.id == proto.entry_computation_id)
    assert f"\nENTRY %{entry.name} {{\n" in short
    n_instructions = sum(len(c.instructions) for c in proto.computations)
    assert sum(line.startswith("  ") for line in short.splitlines()) == n_instructions
    assert "metadata={" in long and "metadata={" not in short
    assert ("  ROOT %add.3 = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} add(f32[5,1024,1024,256]"
            "{3,2,1,0:T(8,128)} %param_0, f32[5,1024,1024,256]{3,2,1,0:T(8,128)} %broadcast.7)"
            ) in short.splitlines()
    content, buffers = g._download(g.module, "pbtxt")
    assert content == {"name": f"{g.module}.hlo_proto.pbtxt", "binary": False}
    assert buffers[0].decode() == g.download("pbtxt")
    with pytest.raises(ValueError, match="kind must be one of"):
        g.download("svg")


def test_widget_whole_module_answers_every_instruction_of_the_computation():
    g = xw.GraphViewer(str(TPU), op="broadcast_add_fusion.2", whole_module=True)
    answer = decoded(*g._graph(g.module, g.op, 0, False, False, [], True))
    entry = graph.module_graph(g.profile, g.module).entry()
    assert answer["whole"] and answer["nodes"]["name"] == entry.names
    assert not any(answer["nodes"]["expanded"]) and len(answer["hlo"]) == len(entry.names)
    assert len(g.nodes()) == len(entry.names)  # the trait, from Python
    dot = g._dot(g.module, g.op, 0, False, [], True)["dot"]
    assert all(f'"{name}" [' in dot for name in entry.names)
    assert decoded(*g._graph(g.module, g.op, 0, True, False, [], False))["nodes"]["name"] == [g.op]
