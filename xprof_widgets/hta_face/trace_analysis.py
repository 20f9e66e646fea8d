"""`TraceAnalysis`: Holistic Trace Analysis's interface over our decoded profile.

An HTA notebook runs by changing its import: the methods keep HTA 0.5's names, arguments and
DataFrame columns (docs/from_hta.md lists where the numbers differ, and why). The trace is
decoded once by our compiled reader and shared with every widget (`self.profile`); HTA's
`visualize=True` shows the widget that draws the same numbers instead of a plotly figure.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.kineto import rank_of
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.locate import find_runs
from ..profile.model import Profile
from . import annotations, breakdowns, counters, launches, memory_bw, sequences, stragglers
from .critical_path import CPGraph, critical_path_graph
from .events import rank_files, rank_syncs, rank_tables

DEFAULT_TRACE_DIR = "/tmp/trace"
"""HTA 0.5's default `trace_dir`."""
CUDA_MAX_LAUNCH_QUEUE_PER_STREAM = 1024
"""HTA's default `max_queue_length`: CUDA's launch queue per stream."""


class TraceAnalysis:
    """HTA's `TraceAnalysis(trace_files=None, trace_dir=...)`: every rank's trace in
    `trace_dir` (one file per rank, the rank from its `distributedInfo`), or the files of
    `trace_files` ({rank: path}, relative to `trace_dir`); an opened `Profile` is taken as
    it is."""

    def __init__(self, trace_files: dict[int, str] | None = None,
                 trace_dir: str | os.PathLike | Profile = DEFAULT_TRACE_DIR,
                 include_last_profiler_step: bool | None = False):
        if include_last_profiler_step:
            raise NotImplementedError(
                "include_last_profiler_step=True: the breakdowns here always leave out the "
                "last profiler step, as HTA does by default (docs/from_hta.md, LAST_STEP).")
        self.profile = _open(trace_files, trace_dir)

    # ---- tables the Overview and Kernel Stats draw ------------------------------------------
    def get_temporal_breakdown(self, visualize: bool = True) -> pd.DataFrame:
        """Per rank, GPU idle, compute and non-compute time in us and percent."""
        self._show(visualize, "Overview")
        return breakdowns.temporal(self.profile)

    def get_comm_comp_overlap(self, visualize: bool = True) -> pd.DataFrame:
        """Per rank, the percent of communication time that computation overlaps."""
        self._show(visualize, "Overview")
        return breakdowns.overlap(self.profile)

    def get_idle_time_breakdown(self, ranks: Sequence[int] | None = None,
                                streams: Sequence[int] | None = None, visualize: bool = True,
                                visualize_pctg: bool = True,
                                show_idle_interval_stats: bool = False,
                                consecutive_kernel_delay: int = 30,
                                ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        """Per rank (default [0]) and stream, idle time as host wait, kernel wait and other;
        the interval statistics are not kept here (None, with a warning, when asked)."""
        if consecutive_kernel_delay != 30:
            raise NotImplementedError("consecutive_kernel_delay: only HTA's 30 us is kept.")
        if show_idle_interval_stats:
            warnings.warn("show_idle_interval_stats: the idle intervals' statistics are not "
                          "computed here; the second frame is None.", stacklevel=2)
        self._show(visualize, "Overview")
        return breakdowns.idle(self.profile, self._ranks(ranks), streams), None

    def get_gpu_kernel_breakdown(self, visualize: bool = True, duration_ratio: float = 0.8,
                                 num_kernels: int = 10, include_memory_kernels: bool = True,
                                 image_renderer: str = "") -> tuple[pd.DataFrame, pd.DataFrame]:
        """Time per kernel type over all ranks, and per rank, type and kernel its statistics."""
        self._show(visualize, "KernelStats")
        return (breakdowns.kernel_types(self.profile, include_memory_kernels),
                breakdowns.kernel_stats(self._tables(), include_memory_kernels,
                                        duration_ratio, num_kernels))

    def get_gpu_user_annotation_breakdown(
            self, use_gpu_annotation: bool = True, visualize: bool = True,
            duration_ratio: float = 0.8, num_kernels: int = 1000,
            allowlist_patterns: list[str] | None = None,
            image_renderer: str | None = None) -> pd.DataFrame | None:
        """Per rank, the time of each user annotation on the GPU (or the CPU); None without."""
        self._show(visualize, "TraceViewer")
        return breakdowns.user_annotations(self._tables(), use_gpu_annotation, duration_ratio,
                                           num_kernels, allowlist_patterns)

    def get_gpu_kernels_with_user_annotations(self, rank: int, expand_names: bool = True,
                                              shortern_names: bool = True,
                                              shorten_names: bool | None = None
                                              ) -> pd.DataFrame | None:
        """One rank's GPU kernels, each with the innermost GPU user annotation it ran under;
        None without GPU annotations. Names are kept whole (`shortern_names` is HTA 0.5's
        spelling, `shorten_names` 0.6's; both accepted)."""
        return annotations.kernels_with_annotations(self._tables()[self._ranks([rank])[0]],
                                                    expand_names)

    # ---- launches and queues -----------------------------------------------------------------
    def get_cuda_kernel_launch_stats(self, ranks: Sequence[int] | None = None,
                                     runtime_cutoff: int = 50, launch_delay_cutoff: int = 100,
                                     include_memory_events: bool = True,
                                     visualize: bool = True) -> dict[int, pd.DataFrame]:
        """Per rank (default [0]): each launch's CPU duration, GPU duration and launch delay."""
        self._show(visualize, "TraceViewer")
        tables = self._tables()
        return {rank: launches.launch_stats(tables[rank], include_memory_events)
                for rank in self._ranks(ranks)}

    def get_queue_length_time_series(self, ranks: Sequence[int] | None = None
                                     ) -> dict[int, pd.DataFrame]:
        """Per rank (default [0]) with launches, each stream's queue length where it changes."""
        tables = self._tables()
        series = {rank: launches.queue_length(tables[rank]) for rank in self._ranks(ranks)}
        return {rank: s for rank, s in series.items() if s is not None}

    def get_queue_length_summary(self, ranks: Sequence[int] | None = None
                                 ) -> pd.DataFrame | None:
        """`describe()` of each stream's queue length, per rank (default [0])."""
        return launches.queue_summary(self.get_queue_length_time_series(ranks))

    def get_queue_length_summary_from_time_series(
            self, queue_length_dict: dict[int, pd.DataFrame]) -> pd.DataFrame | None:
        """get_queue_length_summary from get_queue_length_time_series' answer."""
        return launches.queue_summary(queue_length_dict)

    def get_time_spent_blocked_on_full_queue(
            self, queue_length_dict: dict[int, pd.DataFrame],
            max_queue_length: int = CUDA_MAX_LAUNCH_QUEUE_PER_STREAM) -> pd.DataFrame | None:
        """Per rank and stream, the time its launch queue was full, and its share of the
        rank's trace."""
        tables = self._tables()
        durations = {rank: float(tables[rank]["ts"].max() - tables[rank]["ts"].min())
                     for rank in queue_length_dict}
        return launches.blocked_on_full_queue(queue_length_dict, durations, max_queue_length)

    def get_aten_op_kernels_and_delay(self, ranks: Sequence[int] | None = None,
                                      sort_by: list[str] | None = None
                                      ) -> dict[int, pd.DataFrame]:
        """Per rank (default [0]): per aten op and the kernels it launched, how often, and the
        mean delays from the op to its first launch and from that launch to the kernel."""
        tables = self._tables()
        return {rank: launches.aten_op_kernels(tables[rank], sort_by or ["occurrence_count"])
                for rank in self._ranks(ranks)}

    def get_frequent_cuda_kernel_sequences(self, operator_name: str, output_dir: str,
                                           min_pattern_len: int = 3, rank: int = 0,
                                           top_k: int = 5, visualize: bool = False,
                                           compress_other_kernels: bool = True
                                           ) -> pd.DataFrame:
        """The kernel sequences the ops named `operator_name` launched, most frequent first.
        Nothing is written to `output_dir` (HTA writes a copy of the trace there); with
        `visualize`, the Trace Viewer opens on the profile."""
        self._show(visualize, "TraceViewer")
        return sequences.frequent_sequences(self.profile, operator_name, min_pattern_len, rank)

    # ---- steps and stragglers -----------------------------------------------------------------
    def get_profiler_steps(self) -> list[int]:
        """The profiler steps analysed (HTA leaves the last one out)."""
        return stragglers.profiler_steps(self._tables())

    def get_potential_stragglers(self, profiler_steps: list[int] | None = None,
                                 num_candidates: int = 2, visualize: bool = False,
                                 straggler_identification_impl: Any = None) -> list[int]:
        """The ranks that start the most varying communication kernel latest, most often."""
        if straggler_identification_impl is not None:
            raise NotImplementedError("straggler_identification_impl: a custom metric reads "
                                      "HTA's own frames; only HTA's default metric is here.")
        self._show(visualize, "TraceViewer")
        return stragglers.potential_stragglers(self._tables(), profiler_steps, num_candidates)

    # ---- memory bandwidth ---------------------------------------------------------------------
    def get_memory_bw_time_series(self, ranks: Sequence[int] | None = None
                                  ) -> dict[int, pd.DataFrame]:
        """Per rank (default [0]) with copies, the bandwidth in use per kind of copy."""
        tables = self._tables()
        series = {rank: memory_bw.bandwidth_series(tables[rank]) for rank in self._ranks(ranks)}
        return {rank: s for rank, s in series.items() if s is not None}

    def get_memory_bw_summary(self, ranks: Sequence[int] | None = None) -> pd.DataFrame | None:
        """`describe()` of the non-zero bandwidth per rank (default [0]) and kind of copy."""
        return memory_bw.bandwidth_summary(self.get_memory_bw_time_series(ranks))

    # ---- counters in the trace ----------------------------------------------------------------
    def generate_trace_with_counters(self, time_series: Any = None,
                                     ranks: Sequence[int] | None = None,
                                     output_suffix: str = "_with_counters") -> list[str]:
        """Writes each rank's trace (default [0]) again beside it, as
        `<name><output_suffix>.json[.gz]`, with HTA's counters added: each stream's queue length
        and each kind of copy's bandwidth (`time_series`: TimeSeriesTypes flags, both by
        default). Returns the paths written (HTA returns None)."""
        names = counters.wanted(time_series)
        ranks = self._ranks(ranks)
        queues = (self.get_queue_length_time_series(ranks) if "QUEUE_LENGTH" in names else {})
        copies = (self.get_memory_bw_time_series(ranks) if "MEMCPY_BANDWIDTH" in names else {})
        files = rank_files(self.profile)
        written = []
        for rank in ranks:
            if rank not in queues and rank not in copies:
                continue  # as HTA: a rank with no counter gets no file
            events = counters.counter_events(queues.get(rank), copies.get(rank),
                                             files[rank].zero_ps)
            written.append(counters.write_with_counters(files[rank], events,
                                                        output_suffix or "_with_counters"))
        return written

    # ---- critical path ------------------------------------------------------------------------
    def critical_path_analysis(self, rank: int, annotation: str,
                               instance_id: int | tuple[int, int] | None
                               ) -> tuple[CPGraph, bool] | None:
        """HTA's critical path of one rank within the `instance_id`-th event (or range of
        them) whose name holds `annotation` ("" for the whole trace): the graph and whether
        its longest path was found; None where no event is so named."""
        rank = self._ranks([rank])[0]
        graph = critical_path_graph(self._tables()[rank], rank_syncs(self.profile)[rank],
                                    rank, annotation, instance_id,
                                    self._event_base(rank))
        return None if graph is None else (graph, graph.critical_path())

    def show_critical_path(self, critical_path_graph: CPGraph, tv: Any = None,
                           show_all_edges: bool = False) -> Any:
        """Lays the critical path over a Trace Viewer (`tv`, or a new one on this profile) as
        the flow overlay "critical path" and returns it; nothing is written (NO_OVERLAID_FILE)."""
        if tv is None:
            import xprof_widgets as xw
            tv = xw.TraceViewer(self.profile)
        tv.overlay_flows("critical path", critical_path_graph.overlay_edges(show_all_edges))
        return tv

    def overlay_critical_path_analysis(self, rank: int, critical_path_graph: CPGraph,
                                       output_dir: str | None = None,
                                       only_show_critical_events: bool = True,
                                       show_all_edges: bool = False) -> Any:
        """HTA's overlay, as show_critical_path: the Trace Viewer with the overlay, no file
        in `output_dir`; `only_show_critical_events` is not applied (the view keeps every
        event)."""
        return self.show_critical_path(critical_path_graph, show_all_edges=show_all_edges)

    # ---- plumbing ---------------------------------------------------------------------------
    def _tables(self) -> dict[int, pd.DataFrame]:
        return rank_tables(self.profile)

    def _event_base(self, rank: int) -> int:
        """The global id of the first event of the rank's host."""
        hosts = self.profile.per_host()
        counts = np.cumsum([0] + [h.n_events for h in hosts])
        ranks = [rank_of(h) for h in hosts]
        return int(counts[ranks.index(rank)])

    def _ranks(self, ranks: Sequence[int] | None) -> list[int]:
        """HTA's rank selection: [0] by default; a rank without a trace is an error."""
        wanted = list(ranks) if ranks else [0]
        have = sorted(self._tables())
        missing = [r for r in wanted if r not in have]
        if missing:
            raise ValueError(f"{self.profile.source}: no trace of rank {missing}; ranks: {have}.")
        return wanted

    def _show(self, visualize: bool, widget: str) -> None:
        """HTA's `visualize=True`: display the widget that draws these numbers."""
        if not visualize:
            return
        from IPython.display import display

        import xprof_widgets as xw
        display(getattr(xw, widget)(self.profile))

    def __repr__(self) -> str:
        return f"TraceAnalysis({self.profile.source!r}, ranks={sorted(self._tables())})"


def _open(trace_files: dict[int, str] | None, trace_dir: Any) -> Profile:
    """The profile of HTA's arguments: the directory, or the named files of one directory."""
    if isinstance(trace_dir, Profile) or not trace_files:
        return open_profile(trace_dir)
    paths = [p if os.path.isabs(p) else os.path.join(os.fspath(trace_dir), p)
             for p in trace_files.values()]
    folders = {os.path.dirname(os.path.abspath(p)) for p in paths}
    if len(folders) != 1:
        raise ProfileError(f"trace_files: {sorted(paths)} lie in several directories; put the "
                           "ranks' traces of one job in one directory.")
    folder = folders.pop()
    _, runs = find_runs(folder)
    hosts = {os.path.basename(f.path): f.host for run in runs for f in run.hosts}
    missing = sorted(os.path.basename(p) for p in paths if os.path.basename(p) not in hosts)
    if missing:
        raise ProfileError(f"trace_files: {folder} holds no trace {missing}.")
    return open_profile(folder, host=[hosts[os.path.basename(p)] for p in paths])
