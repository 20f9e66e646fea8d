"""Copy and memset bandwidth over time, as HTA's memory bandwidth counters define it.

Kineto writes each copy's and memset's achieved bandwidth in its `memory bandwidth (GB/s)` arg.
HTA draws, per kind of copy (`Memcpy HtoD`, `Memcpy DtoH`, `Memcpy DtoD`, `Memset`, ...), the
bandwidth in use as a step function: each copy adds its bandwidth from its start to its end (a
copy of 0 us lasts 1 us there; one without the arg has 0 GB/s), and the summary describes the step function's non-zero values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.kineto.gpu_time import hta_kernel_type

SERIES_COLUMNS = ["ts", "pid", "name", "memory_bw_gbps"]


def memory_kind(name: str) -> str:
    """HTA's kind of a memory kernel: `Memset`, `Memcpy XtoY` (its first 11 characters), else
    `Memcpy Unknown`."""
    if name.startswith("Memset"):
        return "Memset"
    return name[:11] if name.startswith("Memcpy") else "Memcpy Unknown"


def bandwidth_series(events: pd.DataFrame) -> pd.DataFrame | None:
    """The bandwidth in use per kind of copy (SERIES_COLUMNS), a row where it changes, by kind
    then time; None without copies or memsets."""
    device = events[events["stream"] != -1]
    names = pd.Series(pd.unique(device["name"].astype(str)), dtype=object)
    memory = names[[hta_kernel_type(n) == "MEMORY" for n in names]]
    copies = device[device["name"].astype(str).isin(memory)]
    if not len(copies):
        return None
    kind = copies["name"].astype(str).map({n: memory_kind(n) for n in memory})
    dur = np.where(copies["dur"].to_numpy() == 0, 1.0, copies["dur"].to_numpy())
    bandwidth = copies["memory_bw_gbps"].fillna(0.0).to_numpy()  # no arg: 0, as HTA reads it
    steps = pd.DataFrame({
        "ts": np.concatenate([copies["ts"].to_numpy(), copies["ts"].to_numpy() + dur]),
        "pid": np.concatenate([copies["pid"].to_numpy()] * 2),
        "name": np.concatenate([kind.to_numpy(object)] * 2),
        "memory_bw_gbps": np.concatenate([bandwidth, -bandwidth]),
    })
    steps = steps.sort_values(["name", "ts", "memory_bw_gbps"], kind="stable",
                              ignore_index=True)
    steps["memory_bw_gbps"] = steps.groupby("name")["memory_bw_gbps"].cumsum()
    return steps[SERIES_COLUMNS]


def bandwidth_summary(series: dict[int, pd.DataFrame]) -> pd.DataFrame | None:
    """get_memory_bw_summary's frame: `describe()` of the non-zero bandwidth per (rank, kind)."""
    frames = [s.assign(rank=rank).loc[lambda f: f["memory_bw_gbps"] > 0,
                                      ["rank", "name", "memory_bw_gbps"]]
              .groupby(["rank", "name"]).describe() for rank, s in series.items()]
    return pd.concat(frames) if frames else None
