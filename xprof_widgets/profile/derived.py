"""Events XProf's trace viewer shows that no file stores as such, made here the same way.

- Step names: a step root (stat `_r`) carrying `step_num` is named `<name> <step_num>`
  (`train 3`), as XProf names the step groups it finds; the root keeps its stats.
- Thread-pool regions: XLA's CPU thread pools write `ThreadpoolListener::StartRegion` and
  `StopRegion` instants; XProf draws the span from each start to the stop that follows it on the
  same thread as one `ThreadpoolListener::Region` slice.

- Framework rows of TPU cores: `Framework Name Scope`, `Framework Ops` and `Source code`,
  built from each op's `tf_op` and `source` stats (see `framework_rows`).
- Host offload rows of TPU cores: each copy to or from host memory as one slice, packed into
  `Host Offload Ops row N` rows (see `host_offload_rows`).
- XLA rows of GPU streams: `XLA Modules - from #N` and `XLA Ops - from #N` after each stream,
  built from its kernels' `hlo_module` and `hlo_op` stats (see `gpu_stream_rows`).

All work on one file's columns while it is decoded (events grouped by line, not yet sorted);
xspace_derived.py decides which planes get which, and keeps a failing one from the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

REGION_START = "ThreadpoolListener::StartRegion"
REGION_STOP = "ThreadpoolListener::StopRegion"
REGION = "ThreadpoolListener::Region"


@dataclass
class MetadataRows:
    """The growing metadata table of a file being decoded (lists indexed by row)."""

    names: list[str]
    display_names: list[str]
    sections: list[int]
    stats: list[dict]

    def add(self, name: str, section: int, stats: dict | None = None) -> int:
        self.names.append(name)
        self.display_names.append(name)
        self.sections.append(section)
        self.stats.append(stats or {})
        return len(self.names) - 1

    def truncate(self, size: int) -> None:
        """Takes back the rows added after the table had `size` (a family that failed)."""
        for column in (self.names, self.display_names, self.sections, self.stats):
            del column[size:]


def step_rows(roots: np.ndarray, step_num: np.ndarray, rows: MetadataRows) -> np.ndarray:
    """The metadata row of each step root (`roots`: their metadata rows) once it is named
    `<name> <step_num>`; rows made once per name and number."""
    renamed: dict[tuple[int, int], int] = {}
    out = np.empty(roots.shape[0], np.int64)
    for k, (row, number) in enumerate(zip(roots.tolist(), step_num.tolist(), strict=True)):
        if (row, number) not in renamed:
            renamed[row, number] = rows.add(f"{rows.names[row]} {number}", rows.sections[row],
                                            rows.stats[row])
        out[k] = renamed[row, number]
    return out


def region_marks(rows: MetadataRows) -> np.ndarray:
    """Per metadata row: 1 for a region start, 2 for a stop, 0 for other events."""
    names = np.asarray(rows.names, dtype=object)
    return (names == REGION_START).astype(np.int8) + 2 * (names == REGION_STOP)


def threadpool_regions(marks: np.ndarray, meta_rows: np.ndarray, start: np.ndarray,
                       group: np.ndarray, rows: MetadataRows
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Region slices for StartRegion/StopRegion pairs (`marks`: `region_marks`): (start,
    duration, group, metadata row)."""
    kind = marks[meta_rows]
    events = np.flatnonzero(kind)
    empty = np.empty(0, np.int64)
    if not events.shape[0]:
        return empty, empty, empty, empty
    events = events[np.lexsort((start[events], group[events]))]
    opens = kind[events] == 1
    pair = np.flatnonzero(opens[:-1] & ~opens[1:] & (group[events[:-1]] == group[events[1:]]))
    first, last = events[pair], events[pair + 1]
    region_rows: dict[int, int] = {}
    out_rows = np.empty(first.shape[0], np.int64)
    for k, row in enumerate(meta_rows[first].tolist()):
        section = rows.sections[row]
        if section not in region_rows:
            region_rows[section] = rows.add(REGION, section)
        out_rows[k] = region_rows[section]
    return start[first], start[last] - start[first], group[first], out_rows


# ---- framework rows of TPU cores ---------------------------------------------------------------
FRAMEWORK_NAME_SCOPE, FRAMEWORK_OPS, SOURCE_CODE = (
    "Framework Name Scope", "Framework Ops", "Source code")
_DERIVED_LINE_IDS = {FRAMEWORK_NAME_SCOPE: 0xDEADBEEF + 2, FRAMEWORK_OPS: 0xDEADBEEF + 3,
                     SOURCE_CODE: 0xDEADBEEF + 7}
"""The line ids XProf gives these rows, which place them after the core's own lines."""
_TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?", re.DOTALL)


@dataclass(frozen=True)
class FrameworkOp:
    """A framework op name (`tf_op` stat) as XProf reads it: `name:Type` for TensorFlow,
    `scope/.../op:` for JAX; anything else is shown as written and has no name scopes."""

    full: str
    category: str  # "tensorflow", "jax", "tf.data", "memcpy" or "unknown"
    name: str
    type: str

    @property
    def label(self) -> str:
        """The name its Framework Ops slice shows (the op type; the whole name if unknown)."""
        if self.category == "unknown":
            return self.name.rstrip()
        if self.category == "tf.data":
            return "Iterator::" + self.name.split("::")[-1]
        return self.type

    @property
    def scopes(self) -> list[str]:
        """Name scopes of a TensorFlow or JAX op, outermost first."""
        if self.category not in ("tensorflow", "jax"):
            return []
        return self.name.split("/")[:-1]


def parse_framework_op(full: str) -> FrameworkOp:
    name, colon, op_type = full.partition(":")
    if not colon:
        memcpy = next((m for m in ("MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH")
                       if full.lower().startswith(m.lower())), None)
        return FrameworkOp(full, "memcpy" if memcpy else "unknown", full, memcpy or "")
    if name == "Iterator":
        return FrameworkOp(full, "tf.data", full, "Dataset")
    if _TF_OP_TYPE.fullmatch(op_type) and _TF_OP_NAME.fullmatch(name):
        return FrameworkOp(full, "tensorflow", name, op_type)
    derived = op_type or _op_type_of(name)
    if _JAX_OP_TYPE.fullmatch(derived):
        return FrameworkOp(full, "jax", name, derived.split("[", 1)[0])
    if not op_type:
        return FrameworkOp(full, "tensorflow", name, derived)
    return FrameworkOp(full, "unknown", full, "")


def _op_type_of(name: str) -> str:
    """`model/layer/MatMul_1` -> `MatMul`: the last path part without a numeric suffix."""
    last = name.rsplit("/", 1)[-1]
    stem, _, suffix = last.rpartition("_")
    return stem if stem and suffix.lstrip("-").isdigit() else last


def dense_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for small non-negative ints (metadata rows,
    keys): a table over their range instead of a sort of every value."""
    if not values.shape[0]:
        return values.copy(), np.empty(0, np.int64)
    present = np.zeros(int(values.max()) + 1, bool)
    present[values] = True
    uniques = np.flatnonzero(present)
    return uniques.astype(values.dtype, copy=False), (np.cumsum(present) - 1)[values]


@dataclass
class DerivedRow:
    """Slices of one derived row: starts, durations and metadata rows."""

    name: str
    line_id: int
    start: np.ndarray
    duration: np.ndarray
    meta: np.ndarray


def framework_rows(events: np.ndarray, start: np.ndarray, duration: np.ndarray,
                   meta_rows: np.ndarray, module: np.ndarray, is_async: np.ndarray,
                   rows: MetadataRows, section: int) -> list[DerivedRow]:
    """XProf's Framework Name Scope, Framework Ops and Source code rows of one TPU core.

    `events`: the core's events in time order; `module`: the XLA module run each belongs to
    (-1 for none); `is_async`: which carry the `_a` stat (XProf leaves those out). Consecutive ops of one module run with the same framework op (name
    scope, source line) merge into one slice per level, as XProf's derived timeline does; a
    change at a name-scope level ends the slices below it. A slice nested in one of the same
    span is shortened by a nanosecond per level, as XProf draws them, so they nest visibly.
    """
    # Everything below is per metadata row (one per op kind), then gathered per event.
    metas, meta_of_event = dense_unique(meta_rows[events])
    stats = [rows.stats[r] for r in metas.tolist()]
    op_text = [str(st.get("tf_op", "")) for st in stats]
    source_text = [str(st.get("source", "")) for st in stats]
    eligible = ~is_async & ~np.array([bool(st.get("_a")) for st in stats], bool)[meta_of_event]
    out: list[DerivedRow] = []
    op_names, op_of_meta = np.unique(np.array(op_text, dtype=object), return_inverse=True)
    op_of_event = op_of_meta[meta_of_event]
    with_op = np.flatnonzero(eligible & (op_names[op_of_event] != ""))
    if with_op.shape[0]:
        parsed = [parse_framework_op(name) for name in op_names.tolist()]
        depth = max(len(op.scopes) for op in parsed)
        scope_names: dict[str, int] = {}
        scope_keys = np.full((len(parsed), depth + 1), -1, np.int64)
        for k, op in enumerate(parsed):
            for level, scope in enumerate(op.scopes):
                scope_keys[k, level] = scope_names.setdefault(scope, len(scope_names))
        ops = op_of_event[with_op]
        keys = scope_keys[ops]
        module_of = module[with_op]
        scope_rows = _merged_levels(keys[:, :depth], events[with_op], start, duration,
                                    module_of, reset=None)
        op_rows = _merged_levels(ops[:, None], events[with_op], start, duration, module_of,
                                 reset=_scope_restarts(keys[:, 0], module_of))
        labels = {key: name for name, key in scope_names.items()}
        if scope_rows[0].shape[0]:
            out.append(_row(FRAMEWORK_NAME_SCOPE, scope_rows, lambda k: labels[k], rows,
                            section))
        out.append(_row(FRAMEWORK_OPS, op_rows, lambda k: parsed[k], rows, section))
    source_names, source_of_meta = np.unique(np.array(source_text, dtype=object),
                                             return_inverse=True)
    source_of_event = source_of_meta[meta_of_event]
    with_source = np.flatnonzero(eligible & (source_names[source_of_event] != ""))
    if with_source.shape[0]:
        merged = _merged_levels(source_of_event[with_source][:, None], events[with_source],
                                start, duration, module[with_source], reset=None)
        out.append(_row(SOURCE_CODE, merged, lambda k: str(source_names[k]), rows, section))
    return out


def _scope_restarts(top: np.ndarray, module: np.ndarray) -> np.ndarray:
    """Where a new outermost name-scope slice starts: XProf then also ends the Framework Ops
    slice, which hangs off the name scopes."""
    present = top >= 0
    new = ~present | (module < 0)
    new[0] = True
    new[1:] |= (top[1:] != top[:-1]) | (module[1:] != module[:-1]) | ~present[:-1]
    return new & present


def _merged_levels(keys: np.ndarray, events: np.ndarray, start: np.ndarray,
                   duration: np.ndarray, module: np.ndarray, reset: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merged slices of every level: (start, end, key, level), nested ones shortened.

    keys[i, level] names event i's slice at that level (-1: none). A level's slice goes on
    while the key, the module run and every level above go on; `reset` marks events where the
    row this one depends on (the name scopes, for Framework Ops) starts anew.
    """
    n, levels = keys.shape
    begin, finish = start[events], start[events] + duration[events]
    parts: list[tuple[np.ndarray, ...]] = []
    new_above = np.zeros(n, bool) if reset is None else reset.copy()
    parent_run = None
    for level in range(levels if n else 0):  # no events (a stream without hlo_module): none
        key = keys[:, level]
        present = key >= 0
        new = new_above | ~present | (module < 0)  # outside a module run: each op alone
        new[0] = True
        new[1:] |= (key[1:] != key[:-1]) | (module[1:] != module[:-1]) | ~present[:-1]
        segment = np.flatnonzero(new)
        heads = segment[present[segment]]
        if not heads.shape[0]:
            break
        tails = np.append(segment[1:], n)[present[segment]] - 1
        ends = np.maximum.reduceat(finish, segment)[present[segment]]
        parent = parent_run[heads] if parent_run is not None else np.full(heads.shape[0], -1)
        parts.append((begin[heads], ends, key[heads], tails, parent))
        is_head = np.zeros(n, np.int64)
        is_head[heads] = 1  # each event's run: the heads at or before it (a sorted search)
        run = np.cumsum(is_head) - 1 + sum(p[0].shape[0] for p in parts[:-1])
        parent_run = np.where(present, run, -1)
        new_above = new
    if not parts:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty
    s, e, k, tail, parent = (np.concatenate(c) for c in zip(*parts, strict=True))
    level = np.concatenate([np.full(p[0].shape[0], lv) for lv, p in enumerate(parts)])
    return s, _shortened(s, e, tail, parent, level), k, level


def _shortened(start: np.ndarray, end: np.ndarray, tail: np.ndarray, parent: np.ndarray,
               level: np.ndarray) -> np.ndarray:
    """Ends nested slices that close together with their parent a nanosecond earlier per level
    whose span equals the one above, so equal spans still nest visibly (as XProf draws them)."""
    shrink = np.zeros(start.shape[0], np.int64)
    for lv in range(1, int(level.max()) + 1 if level.shape[0] else 0):
        mine = np.flatnonzero(level == lv)
        up = parent[mine]
        together = tail[up] == tail[mine]
        same = (start[up] == start[mine]) & (end[up] == end[mine])
        shrink[mine] = np.where(together, shrink[up] + same, 0)
    return end - np.minimum(shrink * 1000, np.maximum(end - start - 1000, 0))


def _row(name: str, merged: tuple, label, rows: MetadataRows, section: int,
         line_id: int | None = None) -> DerivedRow:
    """A derived row's slices with a metadata row per distinct key (made once per key). `label`
    gives a key's name: a FrameworkOp, a (name, display name) pair or a string."""
    start, end, key, _ = merged
    keys, of_slice = dense_unique(key)
    meta_of_key = np.empty(keys.shape[0], np.int64)
    for i, k in enumerate(keys.tolist()):
        what = label(k)
        if isinstance(what, FrameworkOp):
            what = (what.full, what.label)
        full, shown = what if isinstance(what, tuple) else (what, what)
        meta_of_key[i] = rows.add(full, section)
        rows.display_names[meta_of_key[i]] = shown
    return DerivedRow(name, _DERIVED_LINE_IDS[name] if line_id is None else line_id, start,
                      end - start, meta_of_key[of_slice])


# ---- host offload rows of TPU cores -------------------------------------------------------------
HOST_OFFLOAD_ROW = "Host Offload Ops row {}"
_HOST_OFFLOAD_FIRST_ID = 0xDEADBEEF + 8  # XProf's line ids for these rows: 41 of them
_HOST_OFFLOAD_ROWS = 41
_OFFLOAD_OPS = ("copy-start", "copy-done", "dynamic-slice-start", "dynamic-slice-done",
                "dynamic-update-slice-start", "dynamic-update-slice-done")
_HOST_MEMORY = "S(5)"  # the layout's memory space of a tensor in host memory


def host_offload_rows(events: np.ndarray, start: np.ndarray, duration: np.ndarray,
                      meta_rows: np.ndarray, rows: MetadataRows, section: int) -> list[DerivedRow]:
    """XProf's `Host Offload Ops row N` rows of one TPU core: each copy to or from host memory
    (an HLO `copy-start` ... `copy-done` pair, or a dynamic-slice / dynamic-update-slice one,
    whose text names the host memory space S(5)) as one slice from its start to its done,
    offload-<op>.<id>, on the row with the earliest free time that is free when it starts (a
    new row when none is, up to 41).

    `events`: the core's events of `offload_metadata` rows in time order, asynchronous ones
    left out.
    """
    waiting: dict[str, list[int]] = {}
    frontiers: list[int] = []
    slices: list[tuple[int, int, int, str]] = []  # row, start, end, name
    for event in events.tolist():
        shown = rows.display_names[int(meta_rows[event])]
        name = _offload_name(shown)
        if "-start" in shown:
            waiting.setdefault(name, []).append(event)
            continue
        if not waiting.get(name):  # a done whose start was not traced
            continue
        first = waiting[name].pop(0)
        begin, end = int(start[first]), int(start[event] + duration[event])
        row, earliest = -1, begin
        for i, frontier in enumerate(frontiers):
            if frontier <= earliest:
                row, earliest = i, frontier
        if row < 0:
            if len(frontiers) < _HOST_OFFLOAD_ROWS:
                frontiers.append(end)
            row = len(frontiers) - 1
        frontiers[row] = max(frontiers[row], end)
        slices.append((row, begin, end, name))
    metas: dict[str, int] = {}
    out = []
    for row in range(len(frontiers)):
        mine = [s for s in slices if s[0] == row]
        for _, _, _, n in mine:
            if n not in metas:  # one metadata row per name, not per slice
                metas[n] = rows.add(n, section)
        meta = [metas[n] for _, _, _, n in mine]
        out.append(DerivedRow(HOST_OFFLOAD_ROW.format(row), _HOST_OFFLOAD_FIRST_ID + row,
                              np.array([b for _, b, _, _ in mine], np.int64),
                              np.array([e - b for _, b, e, _ in mine], np.int64),
                              np.array(meta, np.int64)))
    return out


def offload_metadata(rows: MetadataRows) -> np.ndarray:
    """Which metadata rows are host offload ops (see `host_offload_rows`)."""
    return np.fromiter((_HOST_MEMORY in name and any(op in shown for op in _OFFLOAD_OPS)
                        for name, shown in zip(rows.names, rows.display_names, strict=True)),
                       bool, len(rows.names))


def _offload_name(op: str) -> str:
    """`copy-start.3` -> `offload-copy.3`, the name XProf gives the pair (`.0` without a
    number)."""
    parts = op.split(".")
    number = parts[-1] if len(parts) > 1 else "0"
    for end in ("-start", "-done"):
        if end in op:
            op = op[:op.index(end)]
            break
    return f"offload-{op}.{number}"


# ---- XLA rows of GPU streams -------------------------------------------------------------------
XLA_MODULES, XLA_OPS = "XLA Modules", "XLA Ops"
_DEVICE_DERIVED_MIN = 0xDEADBEEF + 290  # XProf's first line id for rows derived per GPU stream
_IDS_PER_STREAM = 6  # Framework Name Scope, Framework Ops, XLA Modules, XLA Ops, ..., Source code
_OP_LEVELS = "::"  # how an `hlo_op` stat lists the ops a kernel runs in, outermost first


def gpu_stream_rows(events: np.ndarray, start: np.ndarray, duration: np.ndarray,
                    module: np.ndarray, program: np.ndarray, op: np.ndarray, group: np.ndarray,
                    rows: MetadataRows, section: int, stream: int, index: int
                    ) -> list[DerivedRow]:
    """XProf's `XLA Modules - from #<stream>` and `XLA Ops - from #<stream>` rows of one GPU
    stream (the index-th XProf derives, which gives their line ids).

    `events`: the stream's kernels in time order; `module`, `op`: their `hlo_module` and
    `hlo_op` text ("" for none); `program`: `program_id` (-1 for none); `group`: a code of
    `group_id`. Consecutive kernels of one module (one op) and step group merge into one slice,
    at every level of `a::b` op names; a new module slice also ends the op slices, as XProf's
    derived timeline does on GPUs (where no gap ends a slice).
    """
    out: list[DerivedRow] = []
    suffix = f" - from #{stream}"
    first_id = _DEVICE_DERIVED_MIN + index * _IDS_PER_STREAM
    module_code, names = _factorized(module)
    pairs, pair_of = _factorized_pairs(module_code, program)
    # XProf names a module run `name(program id)`, and keys an op by its program (else module).
    labels = [names[m] if p < 0 else f"{names[m]}({p})" for m, p in pairs]
    prefixes = [names[m] if p < 0 else str(p) for m, p in pairs]
    in_module = np.flatnonzero(module != "")
    module_key = pair_of[in_module]
    modules = _merged_levels(module_key[:, None], events[in_module], start, duration,
                             group[in_module], reset=None)
    if modules[0].shape[0]:
        out.append(_row(XLA_MODULES + suffix, modules, lambda k: labels[k], rows, section,
                        first_id + 2))
    with_op = np.flatnonzero(op != "")
    if with_op.shape[0]:
        op_code, op_texts = _factorized(op[with_op])
        combos, combo_of = _factorized_pairs(pair_of[with_op], op_code)
        split = [op_texts[o].split(_OP_LEVELS) for _, o in combos]
        interned: dict[tuple[str, str], int] = {}
        keys = np.full((len(split), max(map(len, split))), -1, np.int64)
        for c, ((prefix_of, _), parts) in enumerate(zip(combos, split, strict=True)):
            for level, part in enumerate(parts):
                keys[c, level] = interned.setdefault((prefixes[prefix_of], part), len(interned))
        # A module slice made anew (not grown) at or before a kernel, since the last kernel
        # with ops, restarts the op slices.
        new_module = np.zeros(events.shape[0], bool)
        if in_module.shape[0]:
            grown = np.zeros(in_module.shape[0], bool)
            grown[1:] = (module_key[1:] == module_key[:-1]) & (group[in_module][1:] ==
                                                                 group[in_module][:-1])
            new_module[in_module[~grown]] = True
        made = np.cumsum(new_module)[with_op]
        reset = np.diff(made, prepend=0) > 0
        ops = _merged_levels(keys[combo_of], events[with_op], start, duration, group[with_op],
                             reset=reset)
        names_of = {key: pair for pair, key in interned.items()}
        out.append(_row(XLA_OPS + suffix, ops,
                        lambda k: (f"{names_of[k][0]}/{names_of[k][1]}", names_of[k][1]),
                        rows, section, first_id + 3))
    return out


def _factorized(values: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes of the values and the distinct values (hashed: sorting strings is slow)."""
    codes, distinct = pd.factorize(values)
    return codes.astype(np.int64), list(distinct)


def _factorized_pairs(a: np.ndarray, b: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct (a, b) pairs of two int columns (a: codes from 0) and each row's pair."""
    b_code, b_values = pd.factorize(b)
    width = max(len(b_values), 1)
    codes, distinct = pd.factorize(a * width + b_code)
    return ([(int(k // width), int(b_values[k % width])) for k in distinct.tolist()],
            codes.astype(np.int64))
