"""HTA's critical path analysis of one rank, built columnar from the rank's table (events.py).

HTA's graph (hta/analyzers/critical_path_analysis.py) has a start and an end node for every CPU
operator, CUDA runtime call and GPU kernel of the window, and five kinds of edge: along each
thread's call stack (an operator's time, `critical_path_operator`), from one top-level operator
to the next (`critical_path_dependency`), from a launch call to its kernel when the stream was
idle (`critical_path_kernel_launch_delay`), from one kernel to the next on a stream
(`critical_path_kernel_kernel_delay`), and from the last kernel a stream or device sync waited
for to the sync call's end, or between kernels an event links (`critical_path_sync_dependency`).
The critical path is the DAG's longest path by weight (the time between an edge's nodes; 0 for
dependencies, syncs and the return of a blocking call). Here the nodes and edges are numpy columns; the one sequential step
is the longest-path recurrence, a pass over edge ints in topological order. Event syncs link as
HTA links them: `cudaEventSynchronize` (and a `cudaEventQuery` Kineto marks as one) waits for
the kernel launched on the event's stream before its `cudaEventRecord`, and a
`cudaStreamWaitEvent` makes the next work its thread launches on the waiting stream wait for that
kernel (a sync edge from GPU to GPU, which also decides whether that work's launch or the gap
before it is an edge). The GPU's syncs come from events.rank_syncs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..analysis.kineto.gpu_time import HTA_COMMUNICATION
from .launches import QUEUED_LAUNCHES

OPERATOR = "critical_path_operator"
DEPENDENCY = "critical_path_dependency"
KERNEL_LAUNCH_DELAY = "critical_path_kernel_launch_delay"
KERNEL_KERNEL_DELAY = "critical_path_kernel_kernel_delay"
SYNC_DEPENDENCY = "critical_path_sync_dependency"
EDGE_TYPES = (OPERATOR, DEPENDENCY, KERNEL_LAUNCH_DELAY, KERNEL_KERNEL_DELAY, SYNC_DEPENDENCY)
DEFAULT_EDGE_TYPES_IN_VIZ = frozenset({DEPENDENCY, KERNEL_LAUNCH_DELAY, SYNC_DEPENDENCY})
"""The edge types HTA's overlay draws unless `show_all_edges`."""
BLOCKING_SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery",
                       "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
"""Calls whose return is waiting, not work: the edge into their end weighs 0 (as HTA)."""
NODE_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")
SYNC_CATEGORY = "cuda_sync"
EDGE_COLUMNS = ["begin", "end", "weight", "type", "event_idx"]
BREAKDOWN_COLUMNS = ["event_idx", "duration", "type", "s_name", "cat", "pid", "tid", "stream",
                     "index", "bound_by"]


class CPGraph:
    """HTA's `CPGraph` of one rank, as columns. `nodes` (`ev_idx`, `ts`, `is_start`,
    `is_blocking`; a node's id is its row) and `edges` (EDGE_COLUMNS; `event_idx` the event an
    operator or kernel-kernel edge is attributed to, -1 for the rest). `ev_idx` and
    `event_idx` are the events' ids in their host's profile (the rank table's `index`);
    `event_base` turns them into the profile's global ids."""

    def __init__(self, rank: int, trace_df: pd.DataFrame, nodes: pd.DataFrame,
                 edges: pd.DataFrame, event_base: int = 0):
        self.rank = rank
        self.trace_df = trace_df
        self.nodes = nodes
        self.edges = edges
        self.event_base = event_base
        self.critical_path_nodes: list[int] = []
        self.critical_path_events_set: set[int] = set()
        self.critical_path_edges_set: set[tuple[int, int]] = set()
        self.critical_path_edges = edges.iloc[:0]

    def number_of_nodes(self) -> int:
        return len(self.nodes)

    def number_of_edges(self) -> int:
        return len(self.edges)

    def get_nodes_for_event(self, ev_idx: int) -> tuple[int | None, int | None]:
        """The (start, end) node ids of an event; (None, None) for one not in the graph."""
        rows = np.flatnonzero(self.nodes["ev_idx"].to_numpy() == ev_idx)
        if rows.shape[0] != 2:
            return None, None
        starts = self.nodes["is_start"].to_numpy()[rows]
        return int(rows[starts][0]), int(rows[~starts][0])

    def get_edges_attributed_to_event(self, ev_idx: int) -> pd.DataFrame:
        return self.edges[self.edges["event_idx"] == ev_idx]

    def critical_path(self) -> bool:
        """Finds the longest path (HTA's `nx.dag_longest_path` by weight); False where the
        graph has no edge."""
        path = longest_path(self.nodes["ts"].to_numpy(np.float64), self.edges)
        if path.shape[0] < 2:
            return False
        self.critical_path_nodes = path.tolist()
        self.critical_path_events_set = set(
            self.nodes["ev_idx"].to_numpy()[path].tolist())
        pairs = pd.DataFrame({"begin": path[:-1], "end": path[1:]})
        self.critical_path_edges = pairs.merge(self.edges, on=["begin", "end"])
        self.critical_path_edges_set = set(zip(pairs["begin"].tolist(), pairs["end"].tolist()))
        return True

    def get_critical_path_breakdown(self) -> pd.DataFrame | None:
        """One row per critical edge with the event it is attributed to and what bounds it
        (BREAKDOWN_COLUMNS; `tid` is the event's track in our profile)."""
        if not self.critical_path_nodes:
            return None
        events = self.trace_df[["index", "name", "cat", "pid", "track", "stream"]].rename(
            columns={"name": "s_name", "track": "tid"})
        out = self.critical_path_edges.rename(columns={"weight": "duration"}).merge(
            events, left_on="event_idx", right_on="index", how="left")
        kind = out["type"].to_numpy()
        comm = out["s_name"].astype(str).str.match(HTA_COMMUNICATION.pattern).to_numpy()
        out["bound_by"] = np.select(
            [kind == KERNEL_KERNEL_DELAY, kind == KERNEL_LAUNCH_DELAY,
             (kind == DEPENDENCY) | (kind == SYNC_DEPENDENCY), out["stream"].to_numpy() < 0,
             comm],
            ["gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead", "", "cpu_bound",
             "gpu_communication_bound"], "gpu_compute_bound")
        return out[BREAKDOWN_COLUMNS]

    def summary(self) -> pd.Series:
        """The critical path's time by what bounds it, in percent."""
        edges = self.get_critical_path_breakdown()
        return edges.groupby("bound_by")["duration"].sum() / edges["duration"].sum() * 100

    def overlay_edges(self, show_all_edges: bool = False) -> pd.DataFrame:
        """The critical edges between two events as `TraceViewer.overlay_flows` takes them
        (global ids, label = edge type); HTA's default types unless `show_all_edges`."""
        edges = self.critical_path_edges
        if not show_all_edges:
            edges = edges[edges["type"].isin(DEFAULT_EDGE_TYPES_IN_VIZ)]
        ev = self.nodes["ev_idx"].to_numpy()
        src, dst = ev[edges["begin"].to_numpy()], ev[edges["end"].to_numpy()]
        keep = src != dst
        return pd.DataFrame({"src": src[keep] + self.event_base,
                             "dst": dst[keep] + self.event_base,
                             "label": edges["type"].to_numpy()[keep]})

    def __repr__(self) -> str:
        return (f"CPGraph(rank={self.rank}, nodes={len(self.nodes)}, edges={len(self.edges)}, "
                f"critical_path_nodes={len(self.critical_path_nodes)})")


def critical_path_graph(table: pd.DataFrame, syncs: pd.DataFrame, rank: int, annotation: str,
                        instance_id: int | tuple[int, int] | None,
                        event_base: int = 0) -> CPGraph | None:
    """The graph of the events in the window of `annotation`'s instance(s) (HTA's clipping:
    CPU events starting in it, GPU work whose launch call starts in it); None, with a warning,
    where no event's name holds `annotation`."""
    window = _window(table, annotation, instance_id)
    if window is None:
        warnings.warn(f"critical_path_analysis: no event of rank {rank} is named like "
                      f"{annotation!r}.", stacklevel=3)
        return None
    clipped = _clip(table, *window)
    nodes, start_node, end_node, events = _nodes(clipped)
    edges = pd.concat([_cpu_edges(clipped, events, start_node, end_node, nodes),
                       _gpu_edges(table, clipped, _clip_syncs(clipped, syncs, *window), events,
                                  start_node, end_node)],
                      ignore_index=True)
    edges = edges.drop_duplicates(["begin", "end"], keep="last", ignore_index=True)
    return CPGraph(rank, clipped, nodes, edges, event_base)


def _window(table: pd.DataFrame, annotation: str,
            instance_id: int | tuple[int, int] | None) -> tuple[float, float] | None:
    if annotation == "":
        return float(table["ts"].min()), float(table["end"].max())
    marks = table[table["name"].astype(str).str.contains(annotation, regex=False)]
    if not len(marks):
        return None
    first, last = (instance_id if isinstance(instance_id, tuple)
                   else (instance_id or 0, instance_id or 0))
    marks = marks.sort_values("ts", kind="stable").iloc[first:last + 1]
    return float(marks["ts"].min()), float(marks["end"].max())


def _runtime_of(table: pd.DataFrame) -> pd.DataFrame:
    """Launch calls by correlation: the host runtime events (`index`, `ts`, `dur`)."""
    calls = table[(table["stream"] == -1) & table["cat"].isin(NODE_CATEGORIES[1:])
                  & (table["correlation"] >= 0)]
    return calls.drop_duplicates("correlation").set_index("correlation")[["index", "ts", "dur"]]


def _clip(table: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    host = table["stream"] == -1
    ts, dur = table["ts"], table["dur"]
    cpu = host & (ts >= start) & (ts <= end) & (dur > 0)
    calls = _runtime_of(table).reindex(table["correlation"])
    call_ts, call_dur = calls["ts"].to_numpy(), calls["dur"].to_numpy()
    gpu = ~host & (((call_ts >= start) & (call_ts <= end) & (call_dur > 0))
                   | (table["name"] == "Stream Wait Event"))
    return table[cpu | gpu].reset_index(drop=True)


def _clip_syncs(clipped: pd.DataFrame, syncs: pd.DataFrame, start: float, end: float
                ) -> pd.DataFrame:
    """The syncs HTA keeps: on a stream, as the GPU work (its call clipped in); device-wide and
    event syncs (no stream), as host events (starting in the window)."""
    on_stream = syncs["stream"].to_numpy() != -1
    called = syncs["correlation"].isin(_runtime_of(clipped).index).to_numpy()
    own = ((syncs["ts"] >= start) & (syncs["ts"] <= end) & (syncs["dur"] > 0)).to_numpy()
    waits = (syncs["name"] == "Stream Wait Event").to_numpy()
    return syncs[(on_stream & (called | waits)) | (~on_stream & own)].reset_index(drop=True)


def _nodes(clipped: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Start and end nodes of the operators, runtime calls and launched GPU work, by time
    (starts first at one time); per clipped row its start and end node (-1 for none)."""
    host = clipped["stream"].to_numpy() == -1
    launched = clipped["correlation"].isin(_runtime_of(clipped).index).to_numpy()
    events = np.flatnonzero((host & clipped["cat"].isin(NODE_CATEGORIES).to_numpy())
                            | (~host & launched))
    n = events.shape[0]
    ts = np.concatenate([clipped["ts"].to_numpy()[events], clipped["end"].to_numpy()[events]])
    order = np.argsort(ts, kind="stable")
    node_of = np.empty(2 * n, np.int64)
    node_of[order] = np.arange(2 * n)
    start_node = np.full(len(clipped), -1, np.int64)
    end_node = np.full(len(clipped), -1, np.int64)
    start_node[events], end_node[events] = node_of[:n], node_of[n:]
    rows = np.concatenate([events, events])[order]
    blocking = clipped["name"].isin(BLOCKING_SYNC_CALLS).to_numpy()
    nodes = pd.DataFrame({"ev_idx": clipped["index"].to_numpy()[rows], "ts": ts[order],
                          "is_start": order < n, "is_blocking": blocking[rows]})
    return nodes, start_node, end_node, events


def _nesting(track: np.ndarray, ts: np.ndarray, end: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order by (track, start, longest first), and per row of that order its depth in its
    track's stack and its parent's position (-1 at depth 0)."""
    order = np.lexsort((-end, ts, track))
    track, ts, end = track[order], ts[order], end[order]
    depth = np.zeros(order.shape[0], np.int64)
    for t in np.unique(track).tolist():  # per thread: rows before it minus those ended
        on = np.flatnonzero(track == t)
        depth[on] = np.arange(on.shape[0]) - np.searchsorted(np.sort(end[on]), ts[on], "right")
    parent = np.full(order.shape[0], -1, np.int64)
    for d in range(1, int(depth.max(initial=0)) + 1):
        above, here = np.flatnonzero(depth == d - 1), np.flatnonzero(depth == d)
        parent[here] = above[np.searchsorted(above, here) - 1]
    return order, depth, parent


def _cpu_edges(clipped: pd.DataFrame, events: np.ndarray, start_node: np.ndarray,
               end_node: np.ndarray, nodes: pd.DataFrame) -> pd.DataFrame:
    """Each thread's operators walked depth first: an edge between consecutive entries and
    exits inside a top-level operator, a dependency from one top-level operator to the next."""
    cpu = events[clipped["stream"].to_numpy()[events] == -1]
    track = clipped["track"].to_numpy()
    ts, end = clipped["ts"].to_numpy(), clipped["end"].to_numpy()
    order, depth, _ = _nesting(track[cpu], ts[cpu], end[cpu])
    rows = cpu[order]
    parent_of = _call_parents(clipped)
    n = rows.shape[0]
    # tokens: an entry (at start) and an exit (at end); at one time exits first, deepest first
    tok_row = np.concatenate([rows, rows])
    tok_exit = np.repeat([False, True], n)
    tok_depth = np.concatenate([depth, depth])
    tok_time = np.concatenate([ts[rows], end[rows]])
    tok_order = np.lexsort((np.where(tok_exit, -tok_depth, tok_depth), ~tok_exit, tok_time,
                            track[tok_row]))
    tok_row, tok_exit, tok_depth = tok_row[tok_order], tok_exit[tok_order], tok_depth[tok_order]
    node = np.where(tok_exit, end_node[tok_row], start_node[tok_row])
    same = track[tok_row[:-1]] == track[tok_row[1:]]
    src, dst = np.flatnonzero(same), np.flatnonzero(same) + 1
    dependency = tok_exit[src] & (tok_depth[src] == 0)
    node_ts = nodes["ts"].to_numpy()
    blocking = clipped["name"].isin(BLOCKING_SYNC_CALLS).to_numpy()
    weight = np.where(dependency | (tok_exit[dst] & blocking[tok_row[dst]]), 0.0,
                      node_ts[node[dst]] - node_ts[node[src]])
    # attributed: an entry's own event; exit to exit the outer one; exit to entry the parent
    attributed = np.where(~tok_exit[src], tok_row[src],
                          np.where(tok_exit[dst], tok_row[dst], parent_of[tok_row[src]]))
    index = clipped["index"].to_numpy()
    return pd.DataFrame({
        "begin": node[src], "end": node[dst], "weight": weight,
        "type": np.where(dependency, DEPENDENCY, OPERATOR),
        "event_idx": np.where(dependency | (attributed < 0), -1,
                              index[np.maximum(attributed, 0)])}, columns=EDGE_COLUMNS)


def _call_parents(clipped: pd.DataFrame) -> np.ndarray:
    """Per clipped row, the row of the innermost host event around it (any category: HTA's
    call stack), -1 for none and for GPU rows."""
    host = np.flatnonzero(clipped["stream"].to_numpy() == -1)
    order, _, parent = _nesting(clipped["track"].to_numpy()[host],
                                clipped["ts"].to_numpy()[host], clipped["end"].to_numpy()[host])
    out = np.full(len(clipped), -1, np.int64)
    sorted_rows = host[order]
    out[sorted_rows] = np.where(parent >= 0, sorted_rows[np.maximum(parent, 0)], -1)
    return out


def _queue_lengths(table: pd.DataFrame) -> pd.Series:
    """HTA's queue length per stream right after each launch call and each kernel's start
    (launches before kernels at one instant), by event `index`."""
    device = table[table["stream"] != -1]
    calls = table[(table["stream"] == -1) & table["name"].isin(QUEUED_LAUNCHES)]
    calls = calls[["index", "correlation", "ts"]].merge(device[["correlation", "stream"]],
                                                       on="correlation")
    kernels = device[device["correlation"].isin(calls["correlation"])]
    steps = pd.DataFrame({
        "index": np.concatenate([calls["index"].to_numpy(), kernels["index"].to_numpy()]),
        "ts": np.concatenate([calls["ts"].to_numpy(), kernels["ts"].to_numpy()]),
        "stream": np.concatenate([calls["stream"].to_numpy(), kernels["stream"].to_numpy()]),
        "change": np.repeat([1, -1], [len(calls), len(kernels)])})
    steps = steps.sort_values(["stream", "ts", "change"], ascending=[True, True, False],
                              kind="stable")
    return pd.Series(steps.groupby("stream")["change"].cumsum().to_numpy(),
                     index=steps["index"].to_numpy())


def _gpu_edges(table: pd.DataFrame, clipped: pd.DataFrame, syncs: pd.DataFrame,
               events: np.ndarray, start_node: np.ndarray, end_node: np.ndarray
               ) -> pd.DataFrame:
    """Each kernel's time; its launch delay where its stream was idle at the launch, else the
    gap after the stream's previous kernel; and the syncs (`_sync_edges`). Kernels and syncs
    are taken in HTA's order: kernels by start, syncs by end."""
    gpu = events[clipped["stream"].to_numpy()[events] != -1]
    kernels = gpu[clipped["cat"].to_numpy()[gpu] != SYNC_CATEGORY]
    key = np.concatenate([clipped["ts"].to_numpy()[kernels], syncs["end"].to_numpy()])
    place = np.empty(key.shape[0], np.int64)
    place[np.argsort(key, kind="stable")] = np.arange(key.shape[0])
    order = np.argsort(place[:kernels.shape[0]], kind="stable")
    kernels, kernel_place = kernels[order], place[:kernels.shape[0]][order]
    sync_place = place[kernels.shape[0]:]
    stream = clipped["stream"].to_numpy()
    index = clipped["index"].to_numpy()
    row_of = pd.Series(np.arange(len(clipped)), index=index)
    calls = _runtime_of(clipped).reindex(clipped["correlation"].to_numpy()[kernels])
    call_row = row_of.reindex(calls["index"].to_numpy()).to_numpy().astype(np.int64)
    queue = _queue_lengths(table)
    at_launch = queue.reindex(index[call_row]).to_numpy()
    at_start = queue.reindex(index[kernels]).to_numpy()
    k_stream = stream[kernels]
    by_stream = np.lexsort((np.arange(kernels.shape[0]), k_stream))
    prev = np.full(kernels.shape[0], -1, np.int64)
    same = k_stream[by_stream][1:] == k_stream[by_stream][:-1]
    prev[by_stream[1:][same]] = kernels[by_stream[:-1][same]]
    ts, end = clipped["ts"].to_numpy(), clipped["end"].to_numpy()
    recorded = _recorded_kernels(table, syncs)
    waited = _waited_kernels(table, clipped, syncs, recorded, kernels, kernel_place, sync_place,
                             row_of)
    has_wait = waited >= 0
    wait_end = np.where(has_wait, end[np.maximum(waited, 0)], -np.inf)
    has_prev = prev >= 0
    launch = ((at_launch == 1) & (at_start == 0)
              & (~has_prev | (end[np.maximum(prev, 0)] < ts[call_row]))
              & (wait_end < ts[call_row]))
    gap = ~launch & has_prev & (wait_end < end[np.maximum(prev, 0)])
    frames = [
        _edges(start_node[kernels], end_node[kernels], end[kernels] - ts[kernels], OPERATOR,
               index[kernels]),
        _edges(end_node[waited[has_wait]], start_node[kernels[has_wait]],
               np.zeros(int(has_wait.sum())), SYNC_DEPENDENCY, -1),
        _edges(start_node[call_row[launch]], start_node[kernels[launch]],
               ts[kernels[launch]] - ts[call_row[launch]], KERNEL_LAUNCH_DELAY, -1),
        _edges(end_node[prev[gap]], start_node[kernels[gap]],
               ts[kernels[gap]] - end[prev[gap]], KERNEL_KERNEL_DELAY, index[prev[gap]]),
        _sync_edges(clipped, syncs, recorded, kernels, (kernel_place, sync_place), row_of,
                    end_node)]
    return pd.concat(frames, ignore_index=True)


def _sync_edges(clipped: pd.DataFrame, syncs: pd.DataFrame, recorded_kernels: pd.Series,
                kernels: np.ndarray, at: tuple[np.ndarray, np.ndarray], row_of: pd.Series,
                end_node: np.ndarray) -> pd.DataFrame:
    """GPU to CPU: a stream sync waits for its stream's last kernel before it (`at`: the
    kernels' and the syncs' places in HTA's order), a device (context) sync for every stream's,
    an event sync for the kernel its event was recorded after; each edge ends at the sync
    call's end."""
    names = syncs["name"].to_numpy(dtype=object)
    stream = clipped["stream"].to_numpy()
    call_end = _call_nodes(clipped, syncs["correlation"].to_numpy(), row_of, end_node)
    srcs, dsts = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for s in np.unique(stream[kernels]).tolist():  # per stream: its last kernel before a sync
        mine = stream[kernels] == s
        waits = (names == "Context Sync") | ((names == "Stream Sync")
                                             & (syncs["stream"].to_numpy() == s))
        last = np.searchsorted(at[0][mine], at[1][waits]) - 1
        ok = (last >= 0) & (call_end[waits] >= 0)
        srcs.append(end_node[kernels[mine][last[ok]]])
        dsts.append(call_end[waits][ok])
    event = names == "Event Sync"
    if event.any():
        recorded = _row_nodes(recorded_kernels.reindex(
            syncs["wait_on_record"].to_numpy()[event]).to_numpy(), row_of, end_node)
        ok = (recorded >= 0) & (call_end[event] >= 0)
        srcs.append(recorded[ok])
        dsts.append(call_end[event][ok])
    src, dst = np.concatenate(srcs), np.concatenate(dsts)
    return _edges(src, dst, np.zeros(src.shape[0]), SYNC_DEPENDENCY, -1)


def _waited_kernels(table: pd.DataFrame, clipped: pd.DataFrame, syncs: pd.DataFrame,
                    recorded: pd.Series, kernels: np.ndarray, kernel_place: np.ndarray, sync_place: np.ndarray,
                    row_of: pd.Series) -> np.ndarray:
    """Per kernel, the clipped row of the kernel a `cudaStreamWaitEvent` made it wait for (the
    kernel launched last on the event's stream before its `cudaEventRecord`), -1 for none. A
    wait holds the next kernel its thread launches on the waiting stream, once: where several
    name one kernel, the last before it counts."""
    out = np.full(kernels.shape[0], -1, np.int64)
    waits = np.flatnonzero(syncs["name"].to_numpy(dtype=object) == "Stream Wait Event")
    if not waits.shape[0]:
        return out
    src = recorded.reindex(
        syncs["wait_on_record"].to_numpy()[waits]).to_numpy()
    dest = _next_kernels(table, syncs.iloc[waits])
    position = pd.Series(np.arange(kernels.shape[0]),
                         index=clipped["index"].to_numpy()[kernels])
    at = position.reindex(dest).to_numpy()
    ok = ~np.isnan(at) & ~np.isnan(src)
    at = at[ok].astype(np.int64)
    src_row = row_of.reindex(src[ok]).to_numpy()
    later = (kernel_place[at] > sync_place[waits][ok]) & ~np.isnan(src_row)
    order = np.argsort(sync_place[waits][ok][later], kind="stable")  # the last wait wins
    out[at[later][order]] = src_row[later][order].astype(np.int64)
    return out


def _launches(table: pd.DataFrame) -> pd.DataFrame:
    """HTA's launch calls (QUEUED_LAUNCHES) with the kernel each launched: the call's `index`,
    `ts`, `track`; the kernel's `kernel`, `stream` and `pid` (its GPU); by time."""
    device = table[table["stream"] != -1]
    device = device.drop_duplicates("correlation")[["correlation", "index", "stream", "pid"]]
    calls = table[(table["stream"] == -1) & table["name"].isin(QUEUED_LAUNCHES)]
    return calls[["index", "ts", "track", "correlation"]].merge(
        device.rename(columns={"index": "kernel"}), on="correlation").sort_values(
        "ts", kind="stable", ignore_index=True)


def _recorded_kernels(table: pd.DataFrame, syncs: pd.DataFrame) -> pd.Series:
    """Per `cudaEventRecord` correlation, the `index` of the kernel launched last on the
    event's GPU and stream (as the syncs waiting on it state them) at or before the record."""
    stated = syncs[syncs["wait_on_stream"] > -1].drop_duplicates("wait_on_record")
    if not len(stated):  # no event sync: no launch to look up
        return pd.Series(dtype=np.float64)
    records = table[(table["stream"] == -1) & (table["name"] == "cudaEventRecord")][
        ["correlation", "ts"]].merge(
        stated[["wait_on_record", "wait_on_stream", "pid"]].rename(
            columns={"wait_on_record": "correlation", "wait_on_stream": "stream"}),
        on="correlation").sort_values("ts", kind="stable")
    found = pd.merge_asof(records, _launches(table)[["ts", "pid", "stream", "kernel"]],
                          on="ts", by=["pid", "stream"], direction="backward")
    return pd.Series(found["kernel"].to_numpy(np.float64), index=found["correlation"])


def _next_kernels(table: pd.DataFrame, waits: pd.DataFrame) -> np.ndarray:
    """Per `Stream Wait Event`, the `index` of the kernel its thread launches next on the
    waiting stream (from its `cudaStreamWaitEvent` on); NaN for none."""
    calls = table[(table["stream"] == -1) & (table["name"] == "cudaStreamWaitEvent")]
    calls = calls.drop_duplicates("correlation")[["correlation", "ts", "track"]]
    asked = pd.DataFrame({"correlation": waits["correlation"].to_numpy(),
                          "stream": waits["stream"].to_numpy(),
                          "order": np.arange(len(waits))}).merge(calls, on="correlation")
    found = pd.merge_asof(asked.sort_values("ts", kind="stable"),
                          _launches(table)[["ts", "track", "stream", "kernel"]], on="ts",
                          by=["track", "stream"], direction="forward")
    out = np.full(len(waits), np.nan)
    out[found["order"].to_numpy()] = found["kernel"].to_numpy(np.float64)
    return out


def _call_nodes(clipped: pd.DataFrame, correlation: np.ndarray, row_of: pd.Series,
                nodes: np.ndarray) -> np.ndarray:
    """The node of the runtime call of each correlation, -1 where the call has none."""
    calls = _runtime_of(clipped).reindex(correlation)
    return _row_nodes(calls["index"].to_numpy(), row_of, nodes)


def _row_nodes(indices: np.ndarray, row_of: pd.Series, nodes: np.ndarray) -> np.ndarray:
    """The node of each event `index` (NaN allowed), -1 where it is not in the graph."""
    rows = row_of.reindex(indices).to_numpy()
    known = ~np.isnan(rows)
    out = np.full(rows.shape[0], -1, np.int64)
    out[known] = nodes[rows[known].astype(np.int64)]
    return out


def _edges(begin: np.ndarray, end: np.ndarray, weight: np.ndarray, kind: str,
           event_idx: np.ndarray | int) -> pd.DataFrame:
    return pd.DataFrame({"begin": begin.astype(np.int64), "end": end.astype(np.int64),
                         "weight": weight.astype(np.float64),
                         "type": np.full(begin.shape[0], kind, object),
                         "event_idx": np.broadcast_to(event_idx, begin.shape).astype(np.int64)},
                        columns=EDGE_COLUMNS)


def longest_path(node_ts: np.ndarray, edges: pd.DataFrame) -> np.ndarray:
    """The heaviest path's node ids. Topological order: by time, and at one time by how many
    zero-time edges lead to a node (found by relaxing those edges, vectorized); edges that go
    back in time are left out of the search with a warning. Ties go to the edge added first."""
    begin, end = edges["begin"].to_numpy(np.int64), edges["end"].to_numpy(np.int64)
    weight = edges["weight"].to_numpy(np.float64)
    forward = node_ts[end] >= node_ts[begin]
    if not forward.all():
        warnings.warn(f"critical path: {int((~forward).sum())} edges end before they begin; "
                      "they are left out of the path.", stacklevel=3)
        begin, end, weight = begin[forward], end[forward], weight[forward]
    level = np.zeros(node_ts.shape[0], np.int64)
    flat = node_ts[end] == node_ts[begin]
    for _ in range(node_ts.shape[0] + 1):
        new = level.copy()
        np.maximum.at(new, end[flat], level[begin[flat]] + 1)
        if (new == level).all():
            break
        level = new
    topo = np.lexsort((level, node_ts))
    position = np.empty_like(topo)
    position[topo] = np.arange(topo.shape[0])
    by_dst = np.argsort(position[end], kind="stable")
    dist = [0.0] * node_ts.shape[0]
    pred = [-1] * node_ts.shape[0]
    seen = [False] * node_ts.shape[0]
    for u, v, w in zip(begin[by_dst].tolist(), end[by_dst].tolist(), weight[by_dst].tolist()):
        d = dist[u] + w
        if not seen[v] or d > dist[v]:
            dist[v], pred[v], seen[v] = d, u, True
    far = np.asarray(dist)[topo]
    node = int(topo[np.argmax(far)]) if far.shape[0] else -1
    path = []
    while node >= 0:
        path.append(node)
        node = pred[node]
    return np.asarray(path[::-1], np.int64)
