"""`xw.TraceAnalysis`, HTA's interface, against Holistic Trace Analysis 0.5 run live.

Every Kineto trace of tests/data/public whose events name a stream (test_hta_parity.TRACES),
and the two ranks of one job (`hta/trace_filter`), are copied into a directory and loaded by
HTA's TraceAnalysis, as HTA's tests load theirs; each method of ours must answer with HTA's
columns and numbers once the named rules of docs/from_hta.md are applied:

- WHOLE_MICROSECONDS (test_hta_parity): on a trace with fractional times HTA rounds every event
  inward; the test rounds our rank tables as HTA does and runs our analyses on them;
- INSTANT_ORDER: HTA's queue length and bandwidth series sort their steps by time with an
  unstable sort, so several steps at one instant come in any order; ours put launches before
  kernels (a copy's end before another's start). The series are compared by the value after
  each instant, and the summaries (which count every step) on streams without such an instant;
- FLOAT_SUM_ORDER: bandwidths are float sums in another order: equal to 1e-9 relative;
- ONE_ROW_PER_STREAM: HTA's blocked-on-full-queue keeps one stream per rank (the last whose
  queue filled, in its order); ours lists each; HTA's row must be one of ours;
- QUEUE_ROW_ZERO: HTA's queue length counts a launch only where its kernel's row in HTA's table
  is not 0 (`index_correlation > 0`), so a trace whose first event is a kernel loses that
  kernel's launch; the test drops it from ours;
- HTA_RAISES: HTA's aten op delays raise on a trace where no kernel launch lies under an aten
  op (a KeyError from an empty table); ours is an empty table;
- SAME_THREAD: HTA's aten op of a launch call is the latest-starting aten op of any thread
  spanning it; ours is the innermost on the call's thread; the test applies HTA's reading;
- RANKS_ACCUMULATED: HTA's aten op table of a rank also holds the launches of the ranks asked
  before it; HTA is asked one rank at a time, and the job test shows the difference;
- LAUNCH_ORDER: an op's kernel sequence is in order of the launch calls' start here, of their
  place in the file in HTA; sequences in another order are compared by their counts;
- FULL_NAMES: HTA shortens the kernel names of get_gpu_kernels_with_user_annotations
  (`shortern_names`); ours are whole, so kernels are matched by time and stream;
- the breakdowns' rules (test_hta_parity): compared on traces that need none of them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from references import hta_on, read_json
from test_hta_parity import (
    CORPUS,
    CPU_ONLY,
    IDS,
    TRACES,
    WHOLE_US,
    has_fractional_times,
    host_stream_events,
    hta_interval_us,
)

import xprof_widgets as xw
from xprof_widgets.hta_face import annotations, breakdowns, launches, memory_bw, stragglers
from xprof_widgets.hta_face.events import KERNEL_LAUNCH, rank_tables

QUEUE_CAP = 4
"""A queue length small enough that the corpus' queues reach it (CUDA's own cap is 1024)."""


def raised_or(call):
    """HTA's answer, or the exception it raised (its aten op delays raise KeyError on a trace
    with no kernel launch under an aten op: HTA_RAISES)."""
    try:
        return call()
    except KeyError as error:
        return error


@cache
def hta_run(*paths: Path) -> dict:
    """Every answer of HTA's TraceAnalysis on these files as one job's directory, for all its
    ranks, and its clock's origin (`min_ts`)."""
    with hta_on(*paths) as a:
        ranks = sorted(a.t.traces)
        queues = a.get_queue_length_time_series(ranks=ranks)
        out = {
            "ranks": ranks, "min_ts": a.t.min_ts,
            "temporal": a.get_temporal_breakdown(visualize=False),
            "overlap": a.get_comm_comp_overlap(visualize=False),
            "idle": a.get_idle_time_breakdown(ranks=ranks, visualize=False)[0],
            "kernels": a.get_gpu_kernel_breakdown(visualize=False),
            "launch": a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False),
            "launch_kernels_only": a.get_cuda_kernel_launch_stats(
                ranks=ranks, visualize=False, include_memory_events=False),
            "queue": {r: q.copy() for r, q in queues.items()},
            "queue_summary": a.get_queue_length_summary(ranks=ranks),
            "blocked": a.get_time_spent_blocked_on_full_queue(queues, QUEUE_CAP),
            "bandwidth": a.get_memory_bw_time_series(ranks=ranks),
            "bandwidth_summary": a.get_memory_bw_summary(ranks=ranks),
            "annotations_gpu": a.get_gpu_user_annotation_breakdown(visualize=False),
            "annotations_cpu": a.get_gpu_user_annotation_breakdown(
                use_gpu_annotation=False, visualize=False),
            "annotated_kernels": {r: a.get_gpu_kernels_with_user_annotations(r)
                                  for r in ranks},
            "aten": raised_or(lambda: {r: a.get_aten_op_kernels_and_delay(ranks=[r])[r]
                                       for r in ranks}),
            "aten_together": raised_or(lambda: a.get_aten_op_kernels_and_delay(ranks=ranks)),
            "steps": a.get_profiler_steps(),
        }
    return out


def tables_as_hta_sees(path: Path, hta: dict) -> dict[int, pd.DataFrame]:
    """WHOLE_MICROSECONDS on our rank table of a one-file trace: each event rounded as HTA
    rounds it, on HTA's clock (its origin, `min_ts`, subtracted)."""
    profile, doc = xw.open_profile(path), read_json(path)
    (rank, table), = rank_tables(profile).items()
    index = table["index"].to_numpy()
    start = profile.start_ps[index]
    lo, hi = hta_interval_us(profile, doc, start, start + profile.duration_ps[index])
    origin = hta["min_ts"]
    return {rank: table.assign(ts=(lo - origin).astype(np.float64),
                               end=(hi - origin).astype(np.float64),
                               dur=(hi - lo).astype(np.float64))}


# ---- comparisons ---------------------------------------------------------------------------------
def assert_launches_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    assert list(ours.columns) == list(hta.columns)
    key = ["correlation", "cpu_duration", "gpu_duration", "launch_delay"]
    mine = ours.sort_values(key).to_numpy(np.float64)
    theirs = hta.sort_values(key).to_numpy(np.float64)
    np.testing.assert_array_equal(mine, theirs)


def after_each_instant(series: pd.DataFrame, by: str, value: str) -> pd.Series:
    """INSTANT_ORDER: a step series' value after each of its instants."""
    return series.groupby([by, "ts"])[value].last()


def tied(series: pd.DataFrame, by: str) -> set:
    """The `by` values (streams, kinds of copy) with several steps at one instant."""
    counts = series.groupby([by, "ts"]).size()
    return set(counts[counts > 1].index.get_level_values(0))


def assert_series_equal(ours: dict, hta: dict, by: str, value: str) -> set:
    """Step series per rank (INSTANT_ORDER, FLOAT_SUM_ORDER): the same columns, instants and
    value after each; returns the (rank, `by`) with several steps at one instant."""
    assert sorted(ours) == sorted(hta)
    skip = set()
    for rank, steps in hta.items():
        assert list(ours[rank].columns) == list(steps.columns)
        mine = after_each_instant(ours[rank], by, value)
        theirs = after_each_instant(steps.astype({by: ours[rank][by].dtype}), by, value)
        assert [(k, float(t)) for k, t in mine.index] == [(k, float(t)) for k, t in theirs.index]
        np.testing.assert_allclose(mine.to_numpy(np.float64), theirs.to_numpy(np.float64),
                                   rtol=1e-9, atol=1e-9)
        skip |= {(rank, k) for k in tied(steps, by) | tied(ours[rank], by)}
    return skip


def assert_summaries_equal(summary: pd.DataFrame | None, hta_summary: pd.DataFrame | None,
                           skip: set) -> None:
    """`describe()` tables: the same rows and columns; equal values (FLOAT_SUM_ORDER) where no
    (rank, key) is in `skip` (INSTANT_ORDER)."""
    if hta_summary is None:
        assert summary is None
        return
    assert summary.columns.tolist() == hta_summary.columns.tolist()
    assert summary.index.tolist() == sorted(hta_summary.index.tolist())
    shared = [k for k in summary.index if k not in skip]
    np.testing.assert_allclose(summary.loc[shared].to_numpy(np.float64),
                               hta_summary.loc[shared].to_numpy(np.float64), rtol=1e-9)


def assert_queues_equal(ours: dict, hta: dict, summary: pd.DataFrame | None,
                        hta_summary: pd.DataFrame | None) -> None:
    assert_summaries_equal(summary, hta_summary,
                           assert_series_equal(ours, hta, "stream", "queue_length"))
    if summary is not None:  # every launch and kernel is a step, tied or not
        counts = ("queue_length", "count")
        assert summary[counts].equals(hta_summary.loc[summary.index, counts])


def assert_blocked_equal(ours: pd.DataFrame, hta: pd.DataFrame, skip: set) -> None:
    """ONE_ROW_PER_STREAM: each of HTA's rows is ours for that rank and stream."""
    assert list(ours.columns) == list(hta.columns)
    mine = ours.set_index(["rank", "stream"])
    for row in hta.itertuples(index=False):
        if (row.rank, row.stream) in skip:
            continue
        got = mine.loc[(row.rank, row.stream)]
        assert got["duration_at_max_queue_length"] == row.duration_at_max_queue_length
        assert np.isclose(got["relative_duration_at_max_queue_length"],
                          row.relative_duration_at_max_queue_length, rtol=1e-12, atol=0)


def assert_bandwidth_equal(ours: dict, hta: dict, summary: pd.DataFrame | None,
                           hta_summary: pd.DataFrame | None) -> None:
    assert_summaries_equal(summary, hta_summary,
                           assert_series_equal(ours, hta, "name", "memory_bw_gbps"))


def assert_stats_equal(ours: pd.DataFrame | None, hta: pd.DataFrame | None, keys: list[str]
                       ) -> None:
    """Per-name statistics tables (kernels, annotations): same rows, same microseconds."""
    if hta is None:
        assert ours is None
        return
    assert list(ours.columns) == list(hta.columns)
    mine = ours.astype({"name": object}).sort_values(keys).reset_index(drop=True)
    theirs = hta.astype({"name": object}).sort_values(keys).reset_index(drop=True)
    assert mine[keys].astype(str).equals(theirs[keys].astype(str))
    numbers = [c for c in mine.columns if c not in keys]
    np.testing.assert_allclose(mine[numbers].to_numpy(np.float64),
                               theirs[numbers].to_numpy(np.float64), rtol=1e-12, atol=1e-9)


def without_row_zero_launch(table: pd.DataFrame, path: Path | None) -> pd.DataFrame:
    """QUEUE_ROW_ZERO: our table without the launch of the kernel that is HTA's row 0 (the
    file's first timed event with a category other than `Trace`), where it is one."""
    if path is None:
        return table
    first = next(e for e in read_json(path)["traceEvents"] if isinstance(e, dict)
                 and e.get("ph") == "X" and e.get("cat") not in (None, "Trace"))
    correlation = (first.get("args") or {}).get("correlation")
    if (first.get("args") or {}).get("stream") is None or correlation is None:
        return table
    return table[~((table["stream"] == -1) & (table["correlation"] == correlation))]


def assert_annotated_equal(ours: pd.DataFrame | None, hta: pd.DataFrame | None) -> None:
    """FULL_NAMES: each kernel (start, end, stream) has HTA's annotation."""
    if hta is None:
        assert ours is None
        return
    def rows(frame: pd.DataFrame, column: str) -> list:
        return sorted(zip(frame["ts"].astype(float), frame["end"].astype(float),
                          frame["stream"].astype(int), frame[column].astype(str), strict=True))
    assert rows(ours, "user_annotation") == rows(hta, "s_user_annotation")


def assert_aten_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    """LAUNCH_ORDER: an op's kernels are in order of their launch calls' start here, of the
    calls' place in the file in HTA; the rows whose kernels come in another order there are
    compared by their counts, the others in full."""
    key = ["aten_op_name", "kernel_sequence"]
    assert list(ours.columns) == list(hta.columns)
    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.astype({k: str for k in key})
        return frame.assign(kernels=frame["kernel_sequence"].map(
            lambda s: " -> ".join(sorted(s.split(" -> ")))))
    mine, theirs = keyed(ours), keyed(hta)
    groups = ["aten_op_name", "kernels"]
    pd.testing.assert_series_equal(mine.groupby(groups)["occurrence_count"].sum(),
                                   theirs.groupby(groups)["occurrence_count"].sum(),
                                   check_dtype=False)
    both = mine.merge(theirs, on=key, how="outer", indicator=True)
    reordered = set(map(tuple, both.loc[both["_merge"] != "both",
                                        ["aten_op_name", "kernels_x"]].fillna("").values))
    reordered |= set(map(tuple, both.loc[both["_merge"] != "both",
                                         ["aten_op_name", "kernels_y"]].fillna("").values))
    same = both[(both["_merge"] == "both") & ~pd.Series(
        [t in reordered for t in zip(both["aten_op_name"], both["kernels_x"], strict=True)],
        index=both.index)]
    for column in ("occurrence_count", "avg_aten_op_launch_delay", "avg_runtime_delay"):
        assert same[f"{column}_x"].tolist() == same[f"{column}_y"].tolist(), column


def aten_ops_as_hta_reads(table: pd.DataFrame) -> pd.DataFrame:
    """SAME_THREAD: each kernel launch call's aten op as HTA picks it, the latest-starting
    `aten::` op of any thread whose span holds the call's."""
    host = table[table["stream"] == -1]
    ops = host[host["name"].astype(str).str.startswith("aten::")]
    calls = host[host["name"].astype(str).map(lambda n: bool(KERNEL_LAUNCH.search(n)))]
    starts, ends, ids = ops["ts"].to_numpy(), ops["end"].to_numpy(), ops["index"].to_numpy()
    owner = pd.Series(-1, index=table.index, dtype=np.int64)
    for row, ts, end in zip(calls.index, calls["ts"], calls["end"], strict=True):
        spans = np.flatnonzero((starts <= ts) & (ends >= end))
        if spans.shape[0]:
            owner[row] = ids[spans[np.argmax(starts[spans])]]
    return table.assign(aten_op=owner.to_numpy())


def assert_rank_tables_equal(tables: dict[int, pd.DataFrame], hta: dict,
                             path: Path | None = None, check_kernels: bool = True) -> None:
    """Every per-event analysis on our rank tables against HTA's answers."""
    for rank in hta["ranks"]:
        assert_launches_equal(launches.launch_stats(tables[rank], True), hta["launch"][rank])
        assert_launches_equal(launches.launch_stats(tables[rank], False),
                              hta["launch_kernels_only"][rank])
    queued = {r: without_row_zero_launch(t, path) for r, t in tables.items()}
    queues = {r: q for r in hta["ranks"] if (q := launches.queue_length(queued[r])) is not None}
    assert_queues_equal(queues, hta["queue"], launches.queue_summary(queues),
                        hta["queue_summary"])
    durations = {r: float(tables[r]["ts"].max() - tables[r]["ts"].min()) for r in queues}
    skip = {(r, s) for r in queues for s in tied(queues[r], "stream") | tied(hta["queue"][r],
                                                                         "stream")}
    assert_blocked_equal(launches.blocked_on_full_queue(queues, durations, QUEUE_CAP),
                         hta["blocked"], skip)
    series = {r: s for r in hta["ranks"]
              if (s := memory_bw.bandwidth_series(tables[r])) is not None}
    assert_bandwidth_equal(series, hta["bandwidth"], memory_bw.bandwidth_summary(series),
                           hta["bandwidth_summary"])
    for use_gpu, key in ((True, "annotations_gpu"), (False, "annotations_cpu")):
        assert_stats_equal(breakdowns.user_annotations(tables, use_gpu, 0.8, 1000, None),
                           hta[key], ["rank", "name"])
    if check_kernels:
        assert_stats_equal(breakdowns.kernel_stats(tables, True, 0.8, 10), hta["kernels"][1],
                           ["kernel_type", "name", "rank"])
    for rank in hta["ranks"]:
        assert_annotated_equal(annotations.kernels_with_annotations(tables[rank], True),
                               hta["annotated_kernels"][rank])
        ours = launches.aten_op_kernels(aten_ops_as_hta_reads(tables[rank]),
                                        ["occurrence_count"])
        if isinstance(hta["aten"], KeyError):
            assert ours.empty  # HTA_RAISES: no launch under an aten op
        else:
            assert_aten_equal(ours, hta["aten"][rank])
    assert stragglers.profiler_steps(tables) == hta["steps"]


# ---- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_per_event_analyses_equal_hta(path):
    """Launch stats, queue length (series, summary, time at a full queue), copy bandwidth
    (series, summary), user annotations (GPU and CPU) and the per-kernel table, on our rank
    table rounded as HTA rounds it (WHOLE_MICROSECONDS). HOST_STREAM_ARG: where HTA counts a
    host event naming a stream as a kernel, its per-kernel table has that event; not compared."""
    hta = hta_run(path)
    tables = tables_as_hta_sees(path, hta)
    assert_rank_tables_equal(tables, hta, path,
                             check_kernels=not host_stream_events(read_json(path)))


@pytest.mark.parametrize("path", WHOLE_US, ids=[str(p.relative_to(CORPUS)) for p in WHOLE_US])
def test_face_answers_as_hta_does(path):
    """On whole-microsecond traces that need no breakdown rule, the face itself (not its parts)
    answers every method as HTA does: same columns, same numbers, same rounding."""
    hta = hta_run(path)
    face = xw.TraceAnalysis(trace_dir=path)
    assert_face_equal(face, hta, path)


def test_ranks_of_one_job():
    """Two rank files in one directory (trace_dir), and the same two by `trace_files`."""
    folder = CORPUS / "hta" / "trace_filter"
    paths = sorted(folder.glob("*.json.gz"))
    hta = hta_run(*paths)
    assert hta["ranks"] == [0, 1]
    assert_face_equal(xw.TraceAnalysis(trace_dir=folder), hta)
    named = xw.TraceAnalysis(trace_files={0: paths[0].name, 1: paths[1].name},
                             trace_dir=str(folder))
    assert sorted(rank_tables(named.profile)) == [0, 1]
    assert_face_equal(named, hta)
    together, alone = hta["aten_together"], hta["aten"]  # RANKS_ACCUMULATED
    assert together[0].equals(alone[0])
    assert together[1]["occurrence_count"].sum() > alone[1]["occurrence_count"].sum()
    ours = named.get_aten_op_kernels_and_delay(ranks=[0, 1])
    assert ours[1]["occurrence_count"].sum() == launches.aten_op_kernels(
        rank_tables(named.profile)[1], ["occurrence_count"])["occurrence_count"].sum()


def assert_face_equal(face: xw.TraceAnalysis, hta: dict, path: Path | None = None) -> None:
    ranks = hta["ranks"]
    pd.testing.assert_frame_equal(face.get_temporal_breakdown(visualize=False),
                                  hta["temporal"], check_dtype=False)
    pd.testing.assert_frame_equal(face.get_comm_comp_overlap(visualize=False), hta["overlap"],
                                  check_dtype=False)
    idle, stats = face.get_idle_time_breakdown(ranks=ranks, visualize=False)
    assert stats is None
    keys = ["rank", "stream", "idle_category"]
    both = idle.merge(hta["idle"].astype({"idle_category": object}), on=keys, how="left")
    extra = both["idle_time_y"].isna()  # ALL_IDLE_CATEGORIES: ours lists every category
    assert (both.loc[extra, "idle_time_x"] == 0).all()
    assert len(both) - extra.sum() == len(hta["idle"])
    assert both.loc[~extra, "idle_time_x"].tolist() == both.loc[~extra, "idle_time_y"].tolist()
    np.testing.assert_array_equal(both.loc[~extra, "idle_time_ratio_x"].to_numpy(np.float64),
                                  both.loc[~extra, "idle_time_ratio_y"].to_numpy(np.float64))
    kinds, per_kernel = face.get_gpu_kernel_breakdown(visualize=False)
    theirs = hta["kernels"][0]
    theirs = theirs[theirs["sum"] > 0].reset_index(drop=True)  # NO_EMPTY_TYPES
    assert list(kinds.columns) == list(theirs.columns)
    assert kinds["kernel_type"].tolist() == theirs["kernel_type"].tolist()
    np.testing.assert_array_equal(kinds[["sum", "percentage"]].to_numpy(np.float64),
                                  theirs[["sum", "percentage"]].to_numpy(np.float64))
    assert_stats_equal(per_kernel, hta["kernels"][1], ["kernel_type", "name", "rank"])
    assert_rank_tables_equal(rank_tables(face.profile), hta, path)
    launch = face.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    for rank in ranks:
        assert_launches_equal(launch[rank], hta["launch"][rank])
    queues = face.get_queue_length_time_series(ranks=ranks)
    assert sorted(queues) == sorted(hta["queue"])
    summary = face.get_queue_length_summary(ranks=ranks)
    assert (summary is None) == (hta["queue_summary"] is None)
    assert list(face.get_time_spent_blocked_on_full_queue(queues, QUEUE_CAP).columns) == list(
        hta["blocked"].columns)
    assert sorted(face.get_memory_bw_time_series(ranks=ranks)) == sorted(hta["bandwidth"])
    assert_stats_equal(face.get_gpu_user_annotation_breakdown(visualize=False),
                       hta["annotations_gpu"], ["rank", "name"])
    assert face.get_profiler_steps() == hta["steps"]
    for rank in ranks:
        assert_annotated_equal(face.get_gpu_kernels_with_user_annotations(rank),
                               hta["annotated_kernels"][rank])


@pytest.mark.parametrize("path", CPU_ONLY[:3], ids=[p.name for p in CPU_ONLY[:3]])
def test_cpu_only_traces(path):
    """NO_GPU_WORK: a CPU-only trace answers with empty tables, no launches, no queues."""
    face = xw.TraceAnalysis(trace_dir=path)
    ranks = sorted(rank_tables(face.profile))
    assert face.get_temporal_breakdown(visualize=False).empty
    assert face.get_queue_length_time_series(ranks) == {}
    assert face.get_memory_bw_time_series(ranks) == {}
    assert face.get_cuda_kernel_launch_stats(ranks, visualize=False)[ranks[0]].empty


def test_fractional_traces_are_rounded_only_in_the_test():
    """WHOLE_MICROSECONDS matters: on nccl_data the face keeps fractional microseconds."""
    path = CORPUS / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
    assert has_fractional_times(read_json(path))
    launch = xw.TraceAnalysis(trace_dir=path).get_cuda_kernel_launch_stats(visualize=False)[0]
    assert (launch["gpu_duration"] % 1 != 0).any()


def test_unknown_rank_is_named():
    face = xw.TraceAnalysis(trace_dir=TRACES[0])
    with pytest.raises(ValueError, match="no trace of rank") as raised:
        face.get_cuda_kernel_launch_stats(ranks=[7], visualize=False)
    assert f"ranks: {sorted(rank_tables(face.profile))}" in str(raised.value)


DIFF_PAIRS = [("trace_diff/control", "trace_diff/test", "ALL", None),
              ("trace_compare/base", "trace_compare/test", "CPU", None),
              ("trace_compare/base", "trace_compare/test", "GPU", None),
              ("trace_diff/control", "trace_diff/test", "GPU", 1)]


@pytest.mark.parametrize(("control", "test", "device", "step"), DIFF_PAIRS,
                         ids=[f"{a}-{d}-{s}" for a, _, d, s in DIFF_PAIRS])
def test_trace_diff_as_hta(control, test, device, step):
    """xw.TraceDiff.compare_traces and ops_diff equal HTA's on whole-microsecond pairs (HTA's
    label columns, 0 for a name one run lacks)."""
    import hta.trace_diff as hta_diff

    from xprof_widgets.hta_face import DeviceType

    folders = [CORPUS / "hta" / control, CORPUS / "hta" / test]
    control_steps = xw.TraceAnalysis(trace_dir=folders[0]).get_profiler_steps()
    test_steps = xw.TraceAnalysis(trace_dir=folders[1]).get_profiler_steps()
    iterations = (None, None) if step is None else (control_steps[step], test_steps[step])
    paths = [sorted(f.glob("*.json*")) for f in folders]
    with hta_on(*paths[0]) as a, hta_on(*paths[1]) as b:
        labeled = [hta_diff.LabeledTrace("Control", t=a.t), hta_diff.LabeledTrace("Test", t=b.t)]
        theirs = hta_diff.TraceDiff.compare_traces(
            *labeled, control_iteration=iterations[0], test_iteration=iterations[1],
            device_type=hta_diff.DeviceType[device])
        their_split = hta_diff.TraceDiff.ops_diff(
            *labeled, control_iteration=iterations[0], test_iteration=iterations[1],
            device_type=hta_diff.DeviceType[device])
    ours = xw.TraceDiff.compare_traces(folders[0], folders[1], control_iteration=iterations[0],
                                       test_iteration=iterations[1],
                                       device_type=DeviceType[device])
    assert list(ours.columns) == list(theirs.columns)
    assert ours.index.tolist() == sorted(theirs.index.tolist())
    pd.testing.assert_frame_equal(ours, theirs.loc[ours.index], check_dtype=False,
                                  check_names=False)
    split = xw.TraceDiff.ops_diff(folders[0], folders[1], control_iteration=iterations[0],
                                  test_iteration=iterations[1], device_type=device)
    assert {k: sorted(v) for k, v in split.items()} == {k: sorted(v)
                                                        for k, v in their_split.items()}


def test_hta_own_expected_values():
    """The figures HTA's own test suite (tests/test_trace_analysis.py) states for the traces of
    ours it was run on: MTIA's single rank (aten op delays, launch stats, queue length, blocked
    time), the queue trace (no negative queue or bandwidth, four kinds of copy) and
    df_index_resolver (no frequent sequence under aten::clone)."""
    mtia = xw.TraceAnalysis(trace_dir=CORPUS / "hta" / "mtia_trace_single_rank")
    row = mtia.get_aten_op_kernels_and_delay(
        sort_by=["occurrence_count", "avg_aten_op_launch_delay"])[0].iloc[0]
    assert (row["kernel_sequence"], row["aten_op_name"], row["occurrence_count"]) == (
        "customized_fba_mul_const-dtype_Float", "aten::mul", 822)
    assert abs(row["avg_aten_op_launch_delay"] - 1092.545) <= 2.0
    assert abs(row["avg_runtime_delay"] - 293.113) <= 2.0
    launch = mtia.get_cuda_kernel_launch_stats(visualize=False)[0].set_index("correlation")
    assert abs(launch.at[423, "cpu_duration"] - 435.200) <= 2.0
    assert abs(launch.at[423, "gpu_duration"] - 124.768) <= 2.0
    assert abs(launch.at[423, "launch_delay"]) <= 2.0
    summary = mtia.get_queue_length_summary(ranks=[0])
    assert summary.index.to_list() == [(0, 1), (0, 102)]
    stats = summary.loc[(0, 102), "queue_length"].to_dict()
    expected = {"count": 6.0, "mean": 0.5, "std": 0.547723, "min": 0.0, "25%": 0.0,
                "50%": 0.5, "75%": 1.0, "max": 1.0}
    assert all(abs(stats[k] - v) < 0.005 for k, v in expected.items()), stats
    blocked = mtia.get_time_spent_blocked_on_full_queue(mtia.get_queue_length_time_series(),
                                                        max_queue_length=1)
    hits = blocked[np.isclose(blocked["duration_at_max_queue_length"], 1060.0, atol=1.0)]
    assert len(hits) == 1  # ONE_ROW_PER_STREAM: HTA's one row is among ours
    assert abs(hits["relative_duration_at_max_queue_length"].iat[0] - 0.000079) < 5e-6
    queue = xw.TraceAnalysis(trace_dir=CORPUS / "hta" / "negative_queue_length_values_check")
    assert (queue.get_memory_bw_time_series()[0]["memory_bw_gbps"] >= -1e-9).all()
    assert (queue.get_queue_length_time_series()[0]["queue_length"] >= 0).all()
    assert len(queue.get_memory_bw_summary(ranks=[0])) == 4
    resolver = xw.TraceAnalysis(trace_dir=CORPUS / "hta" / "df_index_resolver")
    assert resolver.get_frequent_cuda_kernel_sequences("aten::clone", "/nonexistent",
                                                       rank=1).empty


def test_frequent_sequences_counted_by_hand():
    """HTA 0.5's own kernel sequences do not run with today's numpy (its call graph calls
    np.unique(axis=0) on objects), so the patterns are checked against a count from the JSON:
    each `Optimizer...` annotation before the last profiler step and the kernels its launches
    ran."""
    path = CORPUS / "hta" / "trace_filter" / "sampled_rank-0.json.gz"
    face = xw.TraceAnalysis(trace_dir=path)
    found = face.get_frequent_cuda_kernel_sequences("Optimizer", "/nonexistent", rank=0,
                                                    min_pattern_len=1)
    events = [e for e in read_json(path)["traceEvents"] if e.get("ph") == "X"]
    steps = [e["ts"] for e in events if e["name"].startswith("ProfilerStep#")]
    cut = max(steps) if len(steps) >= 2 else float("inf")  # HTA leaves out the last step
    roots = [e for e in events if "Optimizer" in e["name"] and e.get("cat") in
             ("cpu_op", "user_annotation") and e["ts"] < cut]
    assert len(found) and found["count"].sum() <= len(roots)
    first = found["pattern"].iat[0].split("|")
    assert "Optimizer" in first[0] and len(first) >= 2
    launched = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"
                and any(r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"]
                        and r["tid"] == e["tid"] for r in roots)}
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e["args"].get("correlation") in launched]
    assert found["count"].mul(found["pattern"].str.count(r"\|")).sum() == len(kernels)
    assert found["GPU kernel duration (us)"].sum() == sum(k["dur"] for k in kernels)


def test_visualize_shows_our_widgets(monkeypatch):
    """visualize=True (HTA's default) displays the widget drawing the same numbers, on the same
    decoded profile; no plotly."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    face = xw.TraceAnalysis(trace_dir=CORPUS / "hta" / "trace_filter")
    face.get_temporal_breakdown()
    face.get_gpu_kernel_breakdown()
    face.get_cuda_kernel_launch_stats()
    assert [type(w).__name__ for w in shown] == ["Overview", "KernelStats", "TraceViewer"]
    assert all(w.profile is face.profile for w in shown)


def test_no_communication_no_stragglers():
    """NO_PROBE: on one rank without NCCL kernels HTA's straggler metric raises (no kernel to
    probe); ours answers no straggler and warns."""
    path = CORPUS / "hta" / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"
    with hta_on(path) as a, pytest.raises(ValueError):
        a.get_potential_stragglers()
    with pytest.warns(UserWarning, match="no stragglers"):
        assert xw.TraceAnalysis(trace_dir=path).get_potential_stragglers() == []

