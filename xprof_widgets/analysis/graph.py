"""The HLO graph around one op: XProf's Graph Viewer as DataFrames, DOT and HLO text.

The neighbourhood is the one XLA's graph dumper draws for XProf (`RenderGraphNeighborhoodAround`
in xla/service/hlo_graph_dumper.cc): a breadth-first walk from the op over operands and users
within its computation, `width` hops deep, where a bitcast (as operand or user) costs no hop, a
tuple other than the op is not walked into, and the users of a constant or of an instruction
with more than 16 users are not walked to. With fusions expanded, a fusion in the neighbourhood
whose operands are all shown (or the op itself) is drawn as a cluster holding its fused
computation, nested fusions inside it too.

A module is indexed once per computation (operand and user lists as CSR arrays), so a
neighbourhood reads only the instructions it shows; the numbers come from the Op Profile
(`analyze_op_profile`), joined by (program, op name).
"""

from __future__ import annotations

import html
import math
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.hlo import HloModule, IdIndex, shape_to_string

MAX_USERS_WALKED = 16  # XLA's kMaxUsersToRender: the users of a busier node are left out
NODE_COLUMNS = ["name", "opcode", "shape", "fusion", "distance", "expanded", "time_us",
                "time_share", "flops", "bytes_accessed", "source", "op_name", "computation"]
EDGE_COLUMNS = ["source", "target", "operand_index", "shape"]


# ---- one computation as columns ---------------------------------------------------------------
class _Computation:
    """Operands and users of one computation's instructions as CSR arrays of local indices.

    Users are listed as XLA lists them after reading the proto: each user once, in the order
    the users appear in the computation."""

    def __init__(self, proto: Any):
        self.proto = proto
        self.name: str = proto.name
        instrs = list(proto.instructions)
        n = len(instrs)
        self.ids = np.fromiter((i.id for i in instrs), np.int64, n)
        self.names: list[str] = [i.name for i in instrs]
        self.opcodes: list[str] = [i.opcode for i in instrs]
        operand_ids = [i.operand_ids for i in instrs]
        counts = np.fromiter(map(len, operand_ids), np.int64, n)
        flat = list(chain.from_iterable(operand_ids))
        self.called: dict[int, list[int]] = {
            k: list(c) for k, c in enumerate(i.called_computation_ids for i in instrs) if len(c)}
        self.param_of: dict[int, int] = {  # parameter_number -> local index
            instrs[k].parameter_number: k for k, op in enumerate(self.opcodes)
            if op == "parameter"}
        self._shapes: dict[int, str] = {}
        rows = IdIndex(self.ids)(np.asarray(flat, np.int64))
        self.op_ptr = np.concatenate([[0], np.cumsum(counts)])
        self.op_idx = rows  # -1: an operand id the computation does not hold
        users = np.repeat(np.arange(n), counts)
        keep = rows >= 0
        pairs = np.stack([rows[keep], users[keep]], axis=1)
        order = np.lexsort((np.arange(len(pairs)), pairs[:, 0]))  # by operand, in user order
        pairs = pairs[order]
        if len(pairs):
            first = np.ones(len(pairs), bool)
            first[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
            pairs = pairs[first]
        self.user_idx = pairs[:, 1].copy()
        self.user_ptr = np.searchsorted(pairs[:, 0], np.arange(n + 1))
        self.root = int(IdIndex(self.ids)(np.array([proto.root_id]))[0]) if n else -1

    def shape(self, k: int) -> str:
        """The instruction's shape as XLA prints it, formatted once."""
        text = self._shapes.get(k)
        if text is None:
            text = self._shapes[k] = shape_to_string(self.proto.instructions[k].shape)
        return text

    def operands(self, k: int) -> np.ndarray:
        return self.op_idx[self.op_ptr[k]:self.op_ptr[k + 1]]

    def users(self, k: int) -> np.ndarray:
        return self.user_idx[self.user_ptr[k]:self.user_ptr[k + 1]]

    @cached_property
    def local(self) -> dict[str, int]:
        return {name: k for k, name in enumerate(self.names)}


def _walk(comp: _Computation, root: int, width: int) -> dict[int, int]:
    """Local index -> hops from the root, walked as XLA's `MakeNodeRadiusAroundFilter`."""
    nodes: dict[int, int] = {}
    work = deque([(root, 0)])
    opcodes = comp.opcodes
    while work:
        k, depth = work.popleft()
        nodes[k] = min(depth, nodes.get(k, depth))
        if depth == width:
            continue
        if k == root or opcodes[k] != "tuple":
            for o in comp.operands(k).tolist():
                if o >= 0 and o not in nodes:
                    free = opcodes[o] == "bitcast" or opcodes[k] == "bitcast"
                    work.append((o, depth if free else depth + 1))
        if opcodes[k] == "constant":
            continue
        users = comp.users(k)
        if len(users) > MAX_USERS_WALKED:
            continue
        for u in users.tolist():
            if u not in nodes:
                work.append((u, depth + 1))
    return nodes


def _hops(comp: _Computation, root: int) -> np.ndarray:
    """Hops from the root to every instruction along the walk's edges (a bitcast free, tuples
    not walked into, no users of constants or of busy ops), -1 where it never arrives: one
    0-1 breadth-first pass, each instruction expanded once (the whole computation's view)."""
    hops = np.full(len(comp.names), -1, np.int64)
    best = {root: 0}
    work = deque([(root, 0)])
    done = set()
    opcodes = comp.opcodes
    while work:
        k, depth = work.popleft()
        if k in done:
            continue
        done.add(k)
        hops[k] = depth
        nexts: list[tuple[int, int]] = []
        if k == root or opcodes[k] != "tuple":
            nexts += [(o, depth if opcodes[o] == "bitcast" or opcodes[k] == "bitcast" else depth + 1)
                      for o in comp.operands(k).tolist() if o >= 0]
        users = comp.users(k)
        if opcodes[k] != "constant" and len(users) <= MAX_USERS_WALKED:
            nexts += [(u, depth + 1) for u in users.tolist()]
        for j, d in nexts:
            if j not in done and d < best.get(j, d + 1):
                best[j] = d
                (work.appendleft if d == depth else work.append)((j, d))
    return hops


# ---- a module --------------------------------------------------------------------------------
class ModuleGraph:
    """One HLO module's computations, indexed when first walked."""

    def __init__(self, proto: Any, data: bytes, program_id: int, label: str, where: str = ""):
        self._data, self._where_from = data, where or label
        self.program_id = program_id
        self.label = label
        self.name: str = proto.hlo_module.name
        self._protos = list(proto.hlo_module.computations)
        self._by_id = {int(c.id): k for k, c in enumerate(self._protos)}
        entry_id = proto.hlo_module.entry_computation_id
        self._entry = self._by_id.get(int(entry_id), len(self._protos) - 1)
        self._comps: dict[int, _Computation] = {}

    def computation(self, position: int) -> _Computation:
        if position not in self._comps:
            self._comps[position] = _Computation(self._protos[position])
        return self._comps[position]

    @cached_property
    def module(self) -> HloModule:
        """The scanned module (stack frames for sources), made when a source is first asked."""
        return HloModule(self._data, self.program_id, where=self._where_from)

    def entry(self) -> _Computation:
        """The module's entry computation."""
        return self.computation(self._entry)

    def computations(self) -> list[_Computation]:
        """Every computation, indexed (a whole-module walk: for tests and full views)."""
        return [self.computation(k) for k in range(len(self._protos))]

    def computation_by_id(self, comp_id: int) -> _Computation | None:
        position = self._by_id.get(int(comp_id))
        return None if position is None else self.computation(position)

    def computation_name(self, comp_id: int) -> str | None:
        """A computation's name without indexing it (the HLO text of a call names its callee:
        indexing every fusion body for that took seconds on a whole module)."""
        position = self._by_id.get(int(comp_id))
        return None if position is None else self._protos[position].name

    @cached_property
    def _where(self) -> dict[str, tuple[int, int]]:
        """Instruction name -> (computation position, local index)."""
        where: dict[str, tuple[int, int]] = {}
        for c, comp in enumerate(self._protos):
            for k, ins in enumerate(comp.instructions):
                where[ins.name] = (c, k)
        return where

    def find(self, name: str) -> tuple[_Computation, int] | None:
        """(computation, local index) of an instruction. The entry computation, where the
        profiled ops are, answers first; other names need a walk over every instruction."""
        entry = self.entry()
        if name in entry.local:
            return entry, entry.local[name]
        hit = self._where.get(name)
        return None if hit is None else (self.computation(hit[0]), hit[1])

    def __contains__(self, name: str) -> bool:
        return self.find(name) is not None


def module_graph(profile: Any, module: int | str) -> ModuleGraph:
    """The indexed graph of a module (program id, name or XProf's label), memoized."""
    modules = profile.hlo_modules
    hits = modules[(modules["label"] == module) | (modules["name"] == module)
                   | (modules["program_id"].astype(str) == str(module))]
    if not len(hits):
        known = ", ".join(modules["label"])
        raise ProfileError(f"{profile.source}: no HLO module {module!r}; the profile has "
                           f"{known or 'no HLO protos'}.")
    pid, label = int(hits["program_id"].iloc[0]), str(hits["label"].iloc[0])

    def build() -> ModuleGraph:
        return ModuleGraph(profile.hlo_proto(pid), profile.hlo_proto_bytes(pid), pid, label,
                           profile.source)

    return profile.memo(("graph_module", pid), build)


def find_module(profile: Any, op: str) -> str:
    """XProf's label of the first module (in the profile's order) holding an instruction `op`."""
    for label in profile.hlo_modules["label"]:
        if op in module_graph(profile, label):
            return label
    raise ProfileError(f"{profile.source}: no HLO module has an instruction named {op!r}.")


# ---- the neighbourhood ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Member:
    comp: _Computation
    k: int
    distance: int
    fusion: str | None  # the expanded fusion holding it
    expanded: bool


class Neighbourhood:
    """The instructions and edges around `op`, `width` hops, fusions merged or expanded.

    `toggled` names fusions drawn the other way from the rule: expanded though merged (or at
    the edge), merged though expanded; the view's click on one fusion. `whole` draws every
    instruction of the op's computation, fusions merged (`distance` -1 where the walk from the
    op does not reach)."""

    def __init__(self, graph: ModuleGraph, op: str, width: int = 2, merge_fusions: bool = True,
                 metrics: pd.DataFrame | None = None, total_time_us: float = math.nan,
                 toggled: frozenset[str] = frozenset(), whole: bool = False):
        found = graph.find(op)
        if found is None:
            raise ProfileError(f"module {graph.label} has no instruction named {op!r}.")
        if width < 0:
            raise ValueError(f"width must be 0 or more, not {width}")
        self.graph, self.op, self.width, self.merge_fusions = graph, op, int(width), merge_fusions
        comp, root = found
        self.computation = comp.name
        self._metrics = metrics
        self._total_us = total_time_us
        self.toggled = frozenset(toggled)
        self.whole = whole
        if whole:  # every instruction of the op's computation; hops where the walk reaches
            walked = dict(enumerate(_hops(comp, root).tolist()))
            self.merge_fusions = merge_fusions = True
            self.toggled = frozenset()
        else:
            walked = _walk(comp, root, self.width)
        self._members: list[_Member] = []
        for k in sorted(walked):
            fusion = comp.opcodes[k] == "fusion"
            expand = (fusion and not merge_fusions
                      and (k == root or self._operands_shown(comp, k, walked)))
            if fusion and comp.names[k] in self.toggled:
                expand = not expand
            self._members.append(_Member(comp, k, walked[k], None, expand))
            if expand:
                self._expand(comp, k, walked[k])

    @staticmethod
    def _operands_shown(comp: _Computation, k: int, walked: dict[int, int]) -> bool:
        return all(o >= 0 and (o in walked or comp.opcodes[o] == "constant")
                   for o in comp.operands(k).tolist())

    def _expand(self, comp: _Computation, k: int, distance: int) -> None:
        body = self.graph.computation_by_id(comp.called[k][0]) if k in comp.called else None
        if body is None:
            return
        fusion = comp.names[k]
        for j, opcode in enumerate(body.opcodes):
            nested = opcode == "fusion" and body.names[j] not in self.toggled
            self._members.append(_Member(body, j, distance, fusion, nested))
            if nested:
                self._expand(body, j, distance)

    def _instruction(self, m: _Member) -> Any:
        return m.comp.proto.instructions[m.k]

    # ---- DataFrames -----------------------------------------------------------------------------
    @cached_property
    def _nodes(self) -> pd.DataFrame:
        rows = []
        for m in self._members:
            ins = self._instruction(m)
            rows.append((ins.name, ins.opcode, m.comp.shape(m.k), m.fusion,
                         m.distance, m.expanded, self.graph.module.source_of(ins),
                         ins.metadata.op_name, m.comp.name))
        frame = pd.DataFrame(rows, columns=["name", "opcode", "shape", "fusion", "distance",
                                            "expanded", "source", "op_name", "computation"])
        frame["fusion"] = pd.Series([m.fusion for m in self._members], dtype=object)
        metrics = self._metrics
        if metrics is not None and len(metrics):
            joined = frame[["name"]].merge(metrics, on="name", how="left")
            for column in ("time_us", "flops", "bytes_accessed"):
                frame[column] = joined[column].to_numpy(float)
            profiled = joined["source"].fillna("").to_numpy(object)
            frame["source"] = np.where(frame["source"] == "", profiled, frame["source"])
        else:
            for column in ("time_us", "flops", "bytes_accessed"):
                frame[column] = np.nan
        total = self._total_us
        frame["time_share"] = frame["time_us"] / total if total and total > 0 else np.nan
        return frame[NODE_COLUMNS]

    def nodes(self) -> pd.DataFrame:
        """One row per instruction shown: name, opcode, shape, fusion (the expanded fusion it
        sits in, else None), distance (hops from the op), expanded (a fusion drawn as a cluster
        of its body), time_us / time_share / flops / bytes_accessed (the Op Profile's, NaN for
        ops it has no row for), source (`file:line`), op_name, computation."""
        return self._nodes.copy()

    @cached_property
    def _edges(self) -> pd.DataFrame:
        """Operand edges between shown instructions. An expanded fusion is a cluster, not a
        node: its operand i feeds its body's parameter i, and its body's root feeds its users."""
        shown = {(id(m.comp), m.k): m for m in self._members}
        rows: list[tuple[str, str, int, str]] = []

        def end_of(comp: _Computation, k: int) -> str | None:
            """The node an edge from instruction k leaves: a fusion drawn expanded leaves from
            its body's root."""
            m = shown.get((id(comp), k))
            if m is None:
                return None
            if m.expanded:
                body = self.graph.computation_by_id(comp.called[k][0])
                return end_of(body, body.root) if body is not None and body.root >= 0 else None
            return comp.names[k]

        for m in self._members:
            comp = m.comp
            ins = self._instruction(m)
            for index, o in enumerate(comp.operands(m.k).tolist()):
                if o < 0:
                    continue
                source = end_of(comp, o)
                if source is None:
                    continue
                shape = comp.shape(o)
                if m.expanded:
                    body = self.graph.computation_by_id(comp.called[m.k][0])
                    param = body.param_of.get(index) if body is not None else None
                    if param is not None:
                        rows.append((source, body.names[param], index, shape))
                else:
                    rows.append((source, ins.name, index, shape))
        return pd.DataFrame(rows, columns=EDGE_COLUMNS)

    def edges(self) -> pd.DataFrame:
        """One row per operand edge drawn: source, target (instruction names), operand_index,
        shape (the operand's)."""
        return self._edges.copy()

    # ---- texts ----------------------------------------------------------------------------------
    def to_dot(self) -> str:
        """The neighbourhood as a Graphviz digraph, top to bottom, fusions as clusters, nodes
        filled by their share of device time (white none, red all)."""
        nodes = self._nodes
        title = f"<b>{_esc(self.op)}</b> in {_esc(self.graph.label)}, width {self.width}"
        lines = ["digraph G {", "rankdir = TB;", "compound = true;", f"label = <{title}>;",
                 "labelloc = t;", 'node [shape=rect, style="filled", fontname="Roboto"];']
        rows = nodes[["name", "opcode", "shape", "expanded", "time_share"]].to_dict("records")
        children: dict[str | None, list[int]] = {}
        for i, fusion in enumerate(nodes["fusion"].tolist()):
            children.setdefault(fusion, []).append(i)

        def emit(parent: str | None, indent: str) -> None:
            for i in children.get(parent, []):
                row = rows[i]
                name = row["name"]
                if row["expanded"]:
                    lines.append(f'{indent}subgraph "cluster_{_q(name)}" {{')
                    lines.append(f'{indent}  label = <Fused expression for <b>{_esc(name)}</b>>; '
                                 f'style="rounded,filled"; fillcolor="{_fill(row)}";')
                    emit(name, indent + "  ")
                    lines.append(f"{indent}}}")
                    continue
                pen = ', penwidth=3, color="#b71c1c"' if name == self.op else ""
                lines.append(f'{indent}"{_q(name)}" [label=<<b>{_esc(name)}</b>'
                             f'<br/>{_esc(row["opcode"])}<br/>{_esc(row["shape"])}>, '
                             f'fillcolor="{_fill(row)}"{pen}];')

        emit(None, "")
        for e in self._edges.itertuples(index=False):
            lines.append(f'"{_q(e.source)}" -> "{_q(e.target)}" [tooltip="{_q(e.shape)}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def hlo_lines(self, long: bool = False) -> list[str]:
        """Each shown instruction in HLO's text form, in `nodes()` order; `long` adds its
        metadata (op name, source)."""
        return [instruction_text(self.graph, m.comp, m.k, long) for m in self._members]

    def hlo_text(self, long: bool = False) -> str:
        """The shown instructions in HLO's text form, one computation after another (the op's,
        then each expanded fusion's body); `long` adds each op's metadata (op name, source)."""
        blocks: dict[str, list[str]] = {}
        for m, line in zip(self._members, self.hlo_lines(long), strict=True):
            blocks.setdefault(m.comp.name, []).append("  " + line)
        return "\n\n".join(f"%{name} {{\n" + "\n".join(body) + "\n}"
                            for name, body in blocks.items()) + "\n"


def instruction_text(graph: ModuleGraph, comp: _Computation, k: int, long: bool = False) -> str:
    """Instruction k of `comp` in HLO's text form, from the fields the proto reader declares
    (opcode, shape, operands, parameter number, fusion kind, dimensions, called computations);
    `long` adds its metadata (op name, source file and line)."""
    ins = comp.proto.instructions[k]
    if ins.opcode == "parameter":
        operands = str(ins.parameter_number)
    else:
        operands = ", ".join(f"{comp.shape(o)} %{comp.names[o]}"
                             for o in comp.operands(k).tolist() if o >= 0)
    extra = f", kind={ins.fusion_kind}" if ins.fusion_kind else ""
    if len(ins.dimensions) and ins.opcode != "parameter":
        extra += ", dimensions={" + ",".join(map(str, ins.dimensions)) + "}"
    called = [graph.computation_name(c) for c in comp.called.get(k, [])]
    if called:
        key = "calls" if ins.opcode in ("fusion", "call", "custom-call") else "to_apply"
        extra += f", {key}=" + ", ".join(f"%{name}" for name in called if name is not None)
    meta = ins.metadata
    if long and (meta.op_name or meta.source_file):
        parts = [f'op_name="{meta.op_name}"'] if meta.op_name else []
        if meta.source_file:
            parts.append(f'source_file="{meta.source_file}" source_line={meta.source_line}')
        extra += ", metadata={" + " ".join(parts) + "}"
    root = "ROOT " if k == comp.root else ""
    return f"{root}%{ins.name} = {comp.shape(k)} {ins.opcode}({operands}){extra}"


def module_text(graph: ModuleGraph, long: bool = False) -> str:
    """The whole module in HLO's text form as XLA prints it: `HloModule name`, then each
    computation in the proto's order (callees first), the entry marked `ENTRY`. What the
    proto reader does not declare (literals, windows, backend configs, layouts of the entry's
    program shape) is not printed; `long` adds each instruction's metadata."""
    entry = graph.entry().name
    blocks = [f"HloModule {graph.name}"]
    for comp in graph.computations():
        lines = [f"  {instruction_text(graph, comp, k, long)}" for k in range(len(comp.names))]
        head = ("ENTRY " if comp.name == entry else "") + f"%{comp.name}"
        blocks.append(f"{head} {{\n" + "\n".join(lines) + "\n}")
    return "\n\n".join(blocks) + "\n"


DOWNLOADS = {"pb": "hlo_proto.pb", "pbtxt": "hlo_proto.pbtxt", "short_txt": "short.txt",
             "long_txt": "long.txt"}
"""XProf's downloads of a module's HLO, by kind, and the file name ending each is saved under."""


def module_download(profile: Any, module: int | str, kind: str) -> bytes | str:
    """A module's HLO as XProf's Graph Viewer offers it: `pb` the serialized HloProto exactly
    as the profile carries it, `pbtxt` its protobuf text format (the fields the proto reader
    declares), `short_txt` / `long_txt` the module's HLO text without / with metadata."""
    from google.protobuf import text_format

    if kind not in DOWNLOADS:
        raise ValueError(f"kind must be one of {', '.join(DOWNLOADS)}, not {kind!r}")
    graph = module_graph(profile, module)
    if kind == "pb":
        return profile.hlo_proto_bytes(graph.program_id)
    if kind == "pbtxt":
        return text_format.MessageToString(profile.hlo_proto(graph.program_id))
    return module_text(graph, long=kind == "long_txt")


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _q(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _fill(row: Any) -> str:
    """White to red by share of device time; grey when the profile has no time for it."""
    share = row["time_share"]
    if share is None or not np.isfinite(share):
        return "#eeeeee"
    level = round(255 * (1 - min(1.0, max(0.0, float(share))) ** 0.5))
    return f"#ff{level:02x}{level:02x}"


# ---- from a profile ---------------------------------------------------------------------------
def op_metrics(profile: Any, program_id: int) -> tuple[pd.DataFrame | None, float, str | None]:
    """(name, time_us, flops, bytes_accessed, source) of the module's ops from the Op Profile,
    the profile's total device time (us), and why there are none (None when there are)."""
    from .op_profile import analyze_op_profile

    try:
        analysis = analyze_op_profile(profile)
    except ProfileError as exc:
        return None, math.nan, f"no op times ({exc})"
    ops = analysis.ops
    mine = ops[ops["program_id"].map(lambda p: int(p) & (2**64 - 1))
               == (int(program_id) & (2**64 - 1))]
    cols = mine[["name", "time_us", "flops", "bytes_accessed", "source"]]
    return cols.drop_duplicates("name"), analysis.total_time_ps / 1e6, None


def neighbourhood(profile: Any, op: str, module: int | str | None = None, width: int = 2,
                  merge_fusions: bool = True, toggled: frozenset[str] = frozenset(),
                  whole: bool = False) -> Neighbourhood:
    """The graph around instruction `op` of `module` (found from `op` when None); `whole`: all
    of the op's computation, fusions merged."""
    label = find_module(profile, op) if module is None else module
    graph = module_graph(profile, label)
    metrics, total_us, _ = profile.memo(("graph_metrics", graph.program_id),
                                        lambda: op_metrics(profile, graph.program_id))
    return Neighbourhood(graph, op, width, merge_fusions, metrics, total_us, toggled, whole)


def graph_available(profile: Any) -> bool:
    """Whether the profile carries HLO protos (XProf offers its graph viewer then)."""
    return len(profile.hlo_modules) > 0
