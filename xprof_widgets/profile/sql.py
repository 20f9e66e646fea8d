"""SQL over a profile: DuckDB queries on the decoded columns, answered as pandas DataFrames.

    profile.sql("SELECT name, count(*) AS n, sum(dur) AS total_ns FROM slice GROUP BY name")

Tables, named and shaped as in Perfetto's trace processor so its users' queries read as they do
there (times in integer nanoseconds after the profile start, as `ts` / `dur`):

- `slice`: one row per event: id (the global event index, as `tv.selected_events` and
  `Profile.events` number them), ts, dur, track_id, name, depth, category and program (of XLA
  ops), arg_set_id (= id), full_name (the name as written, e.g. the HLO text). Counter
  samples are in `counter` instead.
- `track`: one row per track: id, name, section, section_kind, host, kind, n_events,
  max_depth, ts and dur of its events.
- `counter`: id, ts, track_id, value of counter samples.
- `args`: the stats of slices (arg_set_id, key, flat_key, int_value, string_value,
  real_value, value_type, display_value), and `extract_arg(arg_set_id, key)` for one of them.
- `trace_bounds`: start_ts (0) and end_ts.
- tables registered by higher layers (`register_table`): the analyses add `step` and `op`.

No event is copied into DuckDB: `slice` is a view over a pandas frame whose columns are the
profile's own numpy arrays (start, duration, depth, metadata row). The columns a profile does
not store per event are derived once per profile, and only when a query first names them (or
names no columns: `*`): `id` (int32 below 2**31 events), `track_id` (int16/int32), and `name`, `category`,
`program` and `full_name` as categoricals (per-event codes of int8 to int32 into the distinct
values, which DuckDB reads as ENUMs, so grouping by name is grouping small integers). At most
about 16 bytes per event, none before the first query.

Stats are decoded on demand, never for every event: `extract_arg` decodes the rows that reach
it; `args` is materialized before each query that names it, for the slices that query can
reach: each SELECT that reads `args` is reduced (through DuckDB's own parser) to the conditions
of its WHERE and inner-join clauses that only involve `slice` columns or `args.arg_set_id`,
and those select the slices whose stats are decoded. A query that leaves more than
`ARGS_LIMIT` slices possible is refused with a message saying how to narrow it.

Layering: this module knows only the profile. Tables that need an analysis (`step` from the
input pipeline, `op` from the op profile) and the op columns of `slice` on CPU profiles, whose
XLA op events name their op only in per-event stats, come through `register_table` and
`register_slice_columns`; the modules in `EXTENSIONS` make those calls and are imported on the
first query, by name, so profile/ never imports analysis/.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import re
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..errors import ProfileError


class Profile(Protocol):
    """What the engine reads of a profile. model.Profile is one; it answers `Profile.sql` with
    `run_query`, so this module names the shape it reads rather than import the model back."""

    start_ps: np.ndarray
    duration_ps: np.ndarray
    depth: np.ndarray
    meta: np.ndarray
    n_events: int
    duration_us: float
    tracks: pd.DataFrame
    metadata: pd.DataFrame
    hlo_modules: pd.DataFrame
    events_per_meta_row: np.ndarray

    def memo(self, key: tuple, build: Callable[[], Any]) -> Any: ...
    def derive_rows(self) -> None: ...
    def event_stats(self, event: int) -> dict[str, Any]: ...
    def metadata_stats(self, event: int) -> dict[str, Any]: ...
    def track_of(self, events: np.ndarray) -> np.ndarray: ...
    def counter_values(self, events: np.ndarray) -> np.ndarray: ...


ARGS_LIMIT = 100_000
"""Most slices whose stats one query may decode into `args`."""
EXTENSIONS = ("xprof_widgets.analysis.sql_tables",)
"""Modules that register the tables of higher layers (imported on the first query)."""
SLICE_COLUMNS = ("id", "ts", "dur", "track_id", "category", "name", "depth", "program",
                 "arg_set_id", "full_name")
ARGS_COLUMNS = ("arg_set_id", "flat_key", "key", "int_value", "string_value", "real_value",
                "value_type", "display_value")

_TABLES: dict[str, Callable[[Profile], pd.DataFrame]] = {}
_SLICE_ANNOTATIONS: list[Callable[[Profile], pd.DataFrame]] = []
_BUILT_IN = {"slice", "track", "counter", "args", "trace_bounds"}
_PER_META = ("name", "category", "program", "full_name")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def register_table(name: str, build: Callable[[Profile], pd.DataFrame]) -> None:
    """Adds table `name` to every profile's SQL: `build(profile)` makes it the first time a
    query names it."""
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in table")
    _TABLES[name] = build


def register_slice_columns(build: Callable[[Profile], pd.DataFrame]) -> None:
    """Adds a source of `slice.category` / `slice.program`: `build(profile)` returns a frame
    with columns meta (metadata row), category, program; it fills what metadata stats lack."""
    _SLICE_ANNOTATIONS.append(build)


def run_query(profile: Profile, query: str) -> pd.DataFrame:
    """The result of one SQL query (or the last of several) over the profile's tables."""
    if not isinstance(query, str) or not query.strip():
        raise ProfileError("sql() needs a query, e.g. \"SELECT name, count(*) FROM slice "
                           "GROUP BY name\".")
    profile.derive_rows()  # the slice table is the timeline's, every row of it
    return profile.memo(("sql",), lambda: Session(profile)).query(query)


class Session:
    """One DuckDB connection over one profile; tables a query names are made when first named.
    Views and tables a user creates stay for the next queries on the same profile."""

    def __init__(self, profile: Profile):
        duckdb = _duckdb()
        for module in EXTENSIONS:
            importlib.import_module(module)
        self.profile = profile
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET python_enable_replacements = false")
        self._made: set[str] = set()
        self._counter_tracks = profile.tracks.index[profile.tracks["kind"] == "counter"].tolist()
        self._register_slices()
        self._register_small_tables()
        self._register_functions()

    # ---- tables -------------------------------------------------------------------------------
    def _register_slices(self) -> None:
        p = self.profile
        self.columns: dict[str, Any] = {"start_ps": p.start_ps, "duration_ps": p.duration_ps,
                                         "depth": p.depth, "meta": p.meta}
        self._builders: dict[str, Callable[[], Any]] = {
            "id": lambda: np.arange(p.n_events, dtype=np.int32 if p.n_events < 2**31
                                    else np.int64),
            "track_id": lambda: _event_tracks(p),
            **{column: (lambda c=column: self._per_event(c)) for column in _PER_META}}
        self._counters = _counter_filter(p, self._counter_tracks)
        if self._counters.startswith("track_id"):
            self.columns["track_id"] = _event_tracks(p)
        self._register_events()

    def _register_events(self) -> None:
        """(Re)defines `slice` over the columns derived so far; the others read as NULL (no
        query sees them: one that names a column derives it first)."""
        self.con.register("_events", pd.DataFrame(self.columns, copy=False))
        have = self.columns

        def column(name: str, source: str, sql_type: str) -> str:
            return f"{source if source in have else f'NULL::{sql_type}'} AS {name}"

        select = [column("id", "id", "INTEGER"), "start_ps // 1000 AS ts",
                  "duration_ps // 1000 AS dur", column("track_id", "track_id", "INTEGER"),
                  column("category", "category", "VARCHAR"), column("name", "name", "VARCHAR"),
                  "depth", column("program", "program", "VARCHAR"),
                  column("arg_set_id", "id", "INTEGER"),
                  column("full_name", "full_name", "VARCHAR")]
        where = f"WHERE {self._counters}" if self._counters else ""
        self.con.execute(f"CREATE OR REPLACE VIEW slice AS SELECT {', '.join(select)} "
                         f"FROM _events {where}")

    def _need(self, columns: set[str]) -> None:
        """Derives the per-event columns a query names (module doc); they stay for later."""
        if "arg_set_id" in columns:
            columns = columns | {"id"}
        missing = [c for c in self._builders if c in columns and c not in self.columns]
        if missing:
            for column in missing:
                self.columns[column] = self._builders[column]()
            self._register_events()

    def _per_event(self, column: str) -> pd.Categorical:
        """A per-metadata column as a categorical over events: distinct values and codes."""
        values = self._meta_columns[column]
        codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
        dtype = np.min_scalar_type(-max(len(uniques), 1)) if len(uniques) < 2**31 else np.int64
        per_event = codes.astype(dtype)[self.profile.meta]
        return pd.Categorical.from_codes(per_event, categories=pd.Index(uniques, dtype=object),
                                         validate=False)

    @cached_property
    def _meta_columns(self) -> pd.DataFrame:
        """One row per event metadata: names, and category/program from stats or annotators."""
        p = self.profile
        stats = p.metadata["stats"].tolist()
        modules = {int(pid) & (2**64 - 1): name for pid, name in
                   zip(p.hlo_modules["program_id"], p.hlo_modules["name"], strict=True)}
        frame = pd.DataFrame({"name": p.metadata["display_name"].astype(object).to_numpy(),
                              "full_name": p.metadata["name"].astype(object).to_numpy(),
                              "category": pd.Series([s.get("hlo_category") for s in stats],
                                                    dtype=object),
                              "program": pd.Series([_program(s, modules) for s in stats],
                                                   dtype=object)})
        for annotate in _SLICE_ANNOTATIONS:
            extra = annotate(p)
            for column in ("category", "program"):
                fill = pd.Series(extra[column].to_numpy(object), index=extra["meta"].to_numpy())
                missing = frame[column].isna().to_numpy()
                frame.loc[missing, column] = fill.reindex(np.flatnonzero(missing)).to_numpy()
        return frame

    def _register_small_tables(self) -> None:
        p = self.profile
        t = p.tracks
        track = pd.DataFrame({
            "id": t.index.to_numpy(np.int64), "name": t["name"].astype(object).to_numpy(),
            "section": t["section"].astype(object).to_numpy(),
            "section_kind": t["section_kind"].astype(object).to_numpy(),
            "host": t["host"].astype(object).to_numpy(),
            "kind": t["kind"].astype(object).to_numpy(),
            "n_events": t["n_events"].to_numpy(np.int64),
            "max_depth": t["max_depth"].to_numpy(np.int64),
            "ts": np.round(t["start_us"].to_numpy(np.float64) * 1000).astype(np.int64),
            "dur": np.round((t["end_us"] - t["start_us"]).to_numpy(np.float64) * 1000
                            ).astype(np.int64)})
        self.con.register("track", track)
        self.con.register("trace_bounds", pd.DataFrame({
            "start_ts": [0], "end_ts": [math.ceil(p.duration_us * 1000)]}))

    def _counter(self) -> pd.DataFrame:
        p = self.profile
        t = p.tracks.loc[self._counter_tracks]
        ids = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in
                              zip(t["first_event"], t["end_event"], strict=True)]
                             or [np.empty(0, np.int64)])
        return pd.DataFrame({"id": ids, "ts": p.start_ps[ids] // 1000,
                             "track_id": p.track_of(ids).astype(np.int64),
                             "value": p.counter_values(ids)})

    def _make(self, names: set[str]) -> None:
        """Registers the lazily made tables a query names (once each)."""
        for name in names - self._made:
            if name == "counter":
                self.con.register("counter", self._counter())
            elif name in _TABLES:
                self.con.register(name, _TABLES[name](self.profile))
            else:
                continue
            self._made.add(name)

    # ---- args ---------------------------------------------------------------------------------
    def _register_functions(self) -> None:
        # Types by name: DuckDB 1.3 (Colab's) has them in duckdb.typing, 1.4+ in duckdb.sqltypes.
        bigint, varchar = self.con.type("BIGINT"), self.con.type("VARCHAR")
        self.con.create_function("extract_arg", self._extract_arg, [bigint, varchar], varchar,
                                 null_handling="special")
        self.con.register("args", _args_frame(self.profile, np.empty(0, np.int64)))

    def _extract_arg(self, arg_set_id: int | None, key: str | None) -> str | None:
        if arg_set_id is None or key is None or not 0 <= arg_set_id < self.profile.n_events:
            return None
        stats = _stats(self.profile, int(arg_set_id))
        key = key.removeprefix("args.").removeprefix("debug.")
        return _display(stats[key]) if key in stats else None

    def _args_for(self, statements: list[dict]) -> None:
        ids = _args_slices(self.con, statements, self.profile.n_events)
        if ids.shape[0] > ARGS_LIMIT:
            raise ProfileError(
                f"this query can reach the args of {ids.shape[0]:,} slices; args decodes stats "
                f"on demand, at most {ARGS_LIMIT:,} slices a query. Narrow the slices in the "
                "same SELECT (WHERE s.name = '...', s.track_id = ..., s.ts BETWEEN ...), filter "
                "args by arg_set_id, or use extract_arg(arg_set_id, 'key') on the rows you keep.")
        self.con.register("args", _args_frame(self.profile, ids))

    # ---- queries ------------------------------------------------------------------------------
    def query(self, query: str) -> pd.DataFrame:
        duckdb = _duckdb()
        statements, names, columns = _parse(self.con, query)
        try:
            self._need(set(self._builders) if "*" in columns else columns)
            self._make(names)
            if "args" in names:
                self._args_for(statements)
            result = self.con.execute(query)
            frame = result.df() if result.description else pd.DataFrame()
        except duckdb.Error as exc:
            raise ProfileError(f"SQL error: {exc}\n{_TABLES_HINT}") from None
        return _plain(frame)


_TABLES_HINT = ("Tables: slice (id, ts, dur, track_id, name, depth, category, program, "
                "arg_set_id, full_name), track (id, name, section, host, kind, ...), counter, "
                "args, trace_bounds, step, op; times in ns. See docs/sql.md.")


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:
        raise ProfileError("Profile.sql needs DuckDB: pip install duckdb") from exc
    return duckdb


def _parse(con: Any, query: str) -> tuple[list[dict], set[str], set[str]]:
    """The query's SELECT statements as DuckDB's syntax tree, the table names it reads and the
    column names it mentions ("*" for all).

    A syntax error is raised here. Statements DuckDB cannot serialize (CREATE, SET...) leave
    no tree; their table names are then every word of the query and their columns all (a
    superset is harmless)."""
    answer = json.loads(con.execute("SELECT json_serialize_sql(?::VARCHAR)",
                                    [query]).fetchall()[0][0])
    if answer.get("error"):
        if answer.get("error_type") == "parser":
            raise ProfileError(f"SQL syntax error: {answer.get('error_message')} in {query!r}"
                               f"\n{_TABLES_HINT}")
        return [], {w.lower() for w in _WORD.findall(query)}, {"*"}
    statements = [s["node"] for s in answer["statements"]]
    nodes = list(_walk(statements))
    tables = {n["table_name"].lower() for n in nodes if n.get("type") == "BASE_TABLE"}
    columns = {n["column_names"][-1].lower() for n in nodes if n.get("class") == "COLUMN_REF"}
    columns |= {"*" for n in nodes if n.get("class") == "STAR"}
    return statements, tables, columns


def _walk(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


# ---- which slices a query can read args of ------------------------------------------------
def _args_slices(con: Any, statements: list[dict], n_events: int) -> np.ndarray:
    """Slice ids whose stats the statements can reach through `args` (module doc)."""
    if not statements:  # not a SELECT DuckDB could parse for us: no restriction known
        return np.arange(n_events, dtype=np.int64)
    parts = []
    for node in _walk(statements):
        if node.get("type") != "SELECT_NODE":
            continue
        tables, conditions = _from_clause(node.get("from_table"))
        args = [t for t in tables if t["table_name"].lower() == "args"]
        if not args:
            continue
        conditions += _conjuncts(node.get("where_clause"))
        slices = [t for t in tables if t["table_name"].lower() == "slice"]
        alias = (slices[0]["alias"] or "slice") if slices else "_args_slice"
        args_alias = args[0]["alias"] or "args"
        usable = [c for c in (_on_slice(c, alias, args_alias, bool(slices)) for c in conditions)
                  if c is not None]
        if not usable:
            return np.arange(n_events, dtype=np.int64)
        parts.append(_select_ids(con, node, alias, usable))
    if not parts:
        return np.empty(0, np.int64)
    return np.unique(np.concatenate(parts))


def _from_clause(table: Any) -> tuple[list[dict], list[dict]]:
    """Base tables joined in a FROM clause (not inside subqueries) and the conditions of its
    inner joins."""
    if not isinstance(table, dict):
        return [], []
    if table.get("type") == "BASE_TABLE":
        return [table], []
    if table.get("type") != "JOIN":
        return [], []
    left, lc = _from_clause(table.get("left"))
    right, rc = _from_clause(table.get("right"))
    inner = table.get("join_type") == "INNER"
    return left + right, lc + rc + (_conjuncts(table.get("condition")) if inner else [])


def _conjuncts(expression: Any) -> list[dict]:
    if not isinstance(expression, dict):
        return []
    if expression.get("type") == "CONJUNCTION_AND":
        return [c for child in expression["children"] for c in _conjuncts(child)]
    return [expression]


def _on_slice(condition: dict, alias: str, args_alias: str, have_slice: bool) -> dict | None:
    """The condition rewritten over the slice alias, or None when it involves other columns.
    Column references inside subqueries belong to those subqueries and are left alone."""
    condition = copy.deepcopy(condition)
    for ref in _column_refs(condition):
        names = ref["column_names"]
        if len(names) == 2 and names[0] == args_alias and names[1] == "arg_set_id":
            ref["column_names"] = [alias, "id"]
        elif len(names) == 2 and names[0] == alias and have_slice and names[1] in SLICE_COLUMNS:
            continue
        elif len(names) == 1 and names[0] == "arg_set_id":
            ref["column_names"] = [alias, "id"]
        elif (len(names) == 1 and have_slice and names[0] in SLICE_COLUMNS
              and names[0] not in ARGS_COLUMNS):
            ref["column_names"] = [alias, names[0]]
        else:
            return None
    return condition


def _column_refs(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        if node.get("class") == "SUBQUERY":
            return
        if node.get("class") == "COLUMN_REF":
            yield node
            return
        for value in node.values():
            yield from _column_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _column_refs(value)


def _select_ids(con: Any, node: dict, alias: str, conditions: list[dict]) -> np.ndarray:
    """`SELECT alias.id FROM slice AS alias WHERE <conditions>`, built from the user's own
    SELECT node so that DuckDB's serializer gets every field it expects."""
    query = copy.deepcopy(node)
    query.update(modifiers=[], group_expressions=[], group_sets=[], having=None, qualify=None,
                 sample=None)
    query["select_list"] = [{"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": "",
                             "query_location": 0, "query_location_length": 0,
                             "column_names": [alias, "id"]}]
    query["from_table"] = {"type": "BASE_TABLE", "alias": alias, "sample": None,
                           "query_location": 0, "query_location_length": 0, "schema_name": "",
                           "table_name": "slice", "column_name_alias": [], "catalog_name": "",
                           "at_clause": None, "qualified_name": {"path": ["slice"]}}
    where = conditions[0] if len(conditions) == 1 else {
        "class": "CONJUNCTION", "type": "CONJUNCTION_AND", "alias": "", "query_location": 0,
        "query_location_length": 0, "children": conditions}
    query["where_clause"] = where
    tree = {"error": False, "statements": [{"node": query, "named_param_map": []}]}
    text = con.execute("SELECT json_deserialize_sql(?::JSON)", [json.dumps(tree)]).fetchall()[0][0]
    return con.execute(text).fetchnumpy()["id"].astype(np.int64)


# ---- args rows ----------------------------------------------------------------------------
def _stats(profile: Profile, event: int) -> dict[str, Any]:
    """An event's stats over its metadata's (flops, hlo_category...), the event's winning."""
    return {**profile.metadata_stats(event), **profile.event_stats(event)}


def _args_frame(profile: Profile, ids: np.ndarray) -> pd.DataFrame:
    rows = [(int(i), key, *_typed(value)) for i in ids.tolist()
            for key, value in _stats(profile, i).items()]
    frame = pd.DataFrame(rows, columns=["arg_set_id", "key", "int_value", "string_value",
                                        "real_value", "value_type", "display_value"])
    frame.insert(1, "flat_key", frame["key"])
    frame = frame.astype({"arg_set_id": np.int64, "int_value": "Int64", "real_value": np.float64,
                          "string_value": object, "value_type": object, "display_value": object})
    return frame[list(ARGS_COLUMNS)]


def _typed(value: Any) -> tuple[Any, Any, Any, str, str]:
    """(int_value, string_value, real_value, value_type, display_value) of one stat."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return int(value), None, None, "bool", str(value).lower()
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return value, None, None, "int", str(value)
        return None, str(value), None, "uint", str(value)
    if isinstance(value, float):
        return None, None, value, "real", repr(value)
    text = _display(value)
    return None, text, None, "string" if isinstance(value, str) else "json", text


def _display(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return "0x" + raw.hex() if len(raw) <= 32 else f"<{len(raw)} bytes>"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=_display)
    return str(value)


# ---- small helpers ------------------------------------------------------------------------
def _event_tracks(profile: Profile) -> np.ndarray:
    """The track of every event, in the smallest signed integer type that holds the track ids
    (tracks hold contiguous event ranges)."""
    def build() -> np.ndarray:
        t = profile.tracks
        out = np.empty(profile.n_events, np.min_scalar_type(-max(len(t), 1)))
        for track, first, end in zip(t.index, t["first_event"], t["end_event"], strict=True):
            out[int(first):int(end)] = track
        return out
    return profile.memo(("event_tracks",), build)


def _counter_filter(profile: Profile, tracks: list[int]) -> str:
    """The condition that keeps counter samples out of `slice`: by metadata row when every
    event of those rows is a sample (no derived column needed), else by track."""
    if not tracks:
        return ""
    t = profile.tracks.loc[tracks]
    ids = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in
                          zip(t["first_event"], t["end_event"], strict=True)])
    metas = np.unique(profile.meta[ids])
    everywhere = profile.events_per_meta_row[metas]
    if int(everywhere.sum()) == ids.shape[0]:
        return f"meta NOT IN ({', '.join(map(str, metas.tolist()))})" if len(metas) else ""
    return f"track_id NOT IN ({', '.join(map(str, tracks))})"


def _program(stats: dict, modules: dict[int, str]) -> str | None:
    pid = stats.get("program_id")
    if pid is None:
        return None
    return modules.get(int(pid) & (2**64 - 1), f"program {pid}")


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """ENUM columns (names) come back as categoricals; users get plain string columns."""
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(object)
    return frame
