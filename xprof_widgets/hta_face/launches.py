"""Kernel launches as HTA measures them: launch delay and the launch queue of each stream.

A kernel and the runtime call that enqueued it share a `correlation` id. HTA's launch stats
join the two: the call's duration, the kernel's, and the launch delay (the kernel's start minus
the call's end, 0 where negative). Its queue length counts, per stream, the work enqueued and not
yet started: +1 at a launch call's start, -1 at its kernel's start. All joins here are pandas
merges over the rank's table (events.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KERNEL_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC",
                   "runFunction - job_prep_and_submit_for_execution")
"""The calls HTA's launch stats count as kernel launches (CUDA and MTIA)."""
MEMORY_LAUNCHES = ("cudaMemcpyAsync", "cudaMemsetAsync")
QUEUED_LAUNCHES = ("cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchKernel",
                   "cudaLaunchKernelExC", "cuLaunchKernel",
                   "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                   "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                   "hipMemcpyWithStream")
"""The calls HTA's queue length counts as enqueueing work on a stream (CUDA, MTIA, ROCm)."""
LAUNCH_COLUMNS = ["correlation", "cpu_duration", "gpu_duration", "launch_delay"]
QUEUE_COLUMNS = ["ts", "pid", "tid", "stream", "queue_length"]
BLOCKED_COLUMNS = ["rank", "stream", "duration_at_max_queue_length",
                   "relative_duration_at_max_queue_length"]


def launch_stats(events: pd.DataFrame, include_memory_events: bool) -> pd.DataFrame:
    """Per correlation of a launch call (LAUNCH_COLUMNS, microseconds), in order of the call."""
    names = KERNEL_LAUNCHES + (MEMORY_LAUNCHES if include_memory_events else ())
    launched = events.loc[events["name"].isin(names), "correlation"]
    linked = events[events["correlation"].isin(launched)]
    host = linked[linked["stream"] == -1]
    device = linked[linked["stream"] != -1]
    joined = host[["correlation", "ts", "dur"]].merge(
        device[["correlation", "ts", "dur"]], on="correlation", suffixes=("_cpu", "_gpu"))
    delay = joined["ts_gpu"] - joined["ts_cpu"] - joined["dur_cpu"]
    return pd.DataFrame({"correlation": joined["correlation"].to_numpy(np.int64),
                         "cpu_duration": joined["dur_cpu"].to_numpy(),
                         "gpu_duration": joined["dur_gpu"].to_numpy(),
                         "launch_delay": delay.clip(lower=0).to_numpy()},
                        columns=LAUNCH_COLUMNS)


def queue_length(events: pd.DataFrame) -> pd.DataFrame | None:
    """The queue length of each stream as a step function (QUEUE_COLUMNS): a row where it
    changes, by stream then time, launches before kernels at one instant; None without any
    launch of work on a stream."""
    device = events[events["stream"] != -1]
    calls = events[(events["stream"] == -1) & events["name"].isin(QUEUED_LAUNCHES)]
    calls = calls[["correlation", "ts"]].merge(
        device[["correlation", "stream", "pid"]], on="correlation")
    kernels = device[device["correlation"].isin(calls["correlation"])]
    if not len(calls):
        return None
    steps = pd.DataFrame({
        "ts": np.concatenate([calls["ts"].to_numpy(), kernels["ts"].to_numpy()]),
        "pid": np.concatenate([calls["pid"].to_numpy(), kernels["pid"].to_numpy()]),
        "stream": np.concatenate([calls["stream"].to_numpy(), kernels["stream"].to_numpy()]),
        "change": np.concatenate([np.ones(len(calls), np.int64),
                                  -np.ones(len(kernels), np.int64)]),
    })
    steps = steps.sort_values(["stream", "ts", "change"], ascending=[True, True, False],
                              kind="stable", ignore_index=True)
    steps["queue_length"] = steps.groupby("stream")["change"].cumsum()
    steps["tid"] = steps["stream"]
    return steps[QUEUE_COLUMNS]


def queue_summary(series: dict[int, pd.DataFrame]) -> pd.DataFrame | None:
    """get_queue_length_summary's frame: `describe()` of the queue length per (rank, stream)."""
    frames = [s.assign(rank=rank)[["rank", "stream", "queue_length"]]
              .groupby(["rank", "stream"]).describe() for rank, s in series.items()]
    return pd.concat(frames) if frames else None


def blocked_on_full_queue(series: dict[int, pd.DataFrame], durations: dict[int, float],
                          max_queue_length: int) -> pd.DataFrame:
    """Per rank and stream, the time its queue held `max_queue_length` or more
    (BLOCKED_COLUMNS; relative to the rank's trace duration, `durations`); a stream whose
    queue never filled has no row."""
    rows = []
    for rank, steps in series.items():
        held = steps.groupby("stream")["ts"].shift(-1) - steps["ts"]
        full = steps["queue_length"] >= max_queue_length
        totals = held[full].groupby(steps.loc[full, "stream"]).sum()
        rows += [{"rank": rank, "stream": stream, "duration_at_max_queue_length": total,
                  "relative_duration_at_max_queue_length": total / durations[rank]}
                 for stream, total in totals.items()]
    return pd.DataFrame(rows, columns=BLOCKED_COLUMNS)


ATEN_COLUMNS = ["aten_op_name", "kernel_sequence", "occurrence_count",
                "avg_aten_op_launch_delay", "avg_runtime_delay"]


def aten_op_kernels(events: pd.DataFrame, sort_by: list[str]) -> pd.DataFrame:
    """get_aten_op_kernels_and_delay's frame (ATEN_COLUMNS): per aten op and the sequence of
    kernels its launches ran (`a -> b`), how often, the mean delay from the op's start to its
    first launch and from that launch to its kernel's start (us, to 0.001)."""
    launches = events[events["aten_op"] >= 0]
    ops = events.set_index("index").loc[launches["aten_op"], ["name", "ts"]]
    device = events.loc[events["stream"] != -1, ["correlation", "ts", "name"]]
    rows = pd.DataFrame({"op": launches["aten_op"].to_numpy(),
                         "op_name": ops["name"].astype(str).to_numpy(),
                         "op_ts": ops["ts"].to_numpy(),
                         "call_ts": launches["ts"].to_numpy(),
                         "correlation": launches["correlation"].to_numpy()})
    rows = rows.merge(device.rename(columns={"ts": "kernel_ts", "name": "kernel"}),
                      on="correlation").sort_values(["op", "call_ts"], kind="stable")
    if not len(rows):
        return pd.DataFrame(columns=ATEN_COLUMNS)
    rows["kernel"] = rows["kernel"].astype(str)
    per_op = rows.groupby("op", sort=False).agg(
        aten_op_name=("op_name", "first"), kernel_sequence=("kernel", " -> ".join),
        first_launch=("call_ts", "first"), op_ts=("op_ts", "first"),
        first_kernel=("kernel_ts", "first"))
    per_op["launch_delay"] = per_op["first_launch"] - per_op["op_ts"]
    per_op["runtime_delay"] = per_op["first_kernel"] - per_op["first_launch"]
    out = per_op.groupby(["aten_op_name", "kernel_sequence"]).agg(
        occurrence_count=("runtime_delay", "count"),
        avg_aten_op_launch_delay=("launch_delay", "mean"),
        avg_runtime_delay=("runtime_delay", "mean")).reset_index()
    out = out.sort_values(sort_by, ascending=False, kind="stable")
    return out.round({"avg_aten_op_launch_delay": 3, "avg_runtime_delay": 3})[ATEN_COLUMNS]
