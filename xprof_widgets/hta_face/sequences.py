"""Frequent kernel sequences under a CPU op, as HTA's get_frequent_cuda_kernel_sequences finds them.

The roots are the host events whose name contains `operator_name`, at the least call depth any
of them has, that launched at least `min_pattern_len` kernels (from themselves or the ops they
called). A root's pattern is its name and its kernels' names in order of start, joined by `|`;
equal patterns are counted, with the kernels' total time and the roots' total time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.hosts import host_parts
from ..analysis.kineto import innermost_enclosing, rank_of
from ..profile.model import Profile
from .events import host_events

COLUMNS = ["pattern", "count", "GPU kernel duration (us)", "CPU op duration (us)"]


def pattern_instances(profile: Profile, operator_name: str, min_pattern_len: int
                      ) -> tuple[int, pd.DataFrame]:
    """One host's roots and their patterns (a per-host part): `root`, `pattern`, `kernel_us`,
    `root_us`."""
    events = host_events(profile)
    host = events[events["stream"] == -1]
    named = host[host["name"].astype(str).str.contains(operator_name, regex=False)]
    empty = pd.DataFrame(columns=["root", "pattern", "kernel_us", "root_us"])
    if not len(named):
        return rank_of(profile), empty
    depth = profile.depth[named["index"].to_numpy()]
    roots = named[depth == depth.min()]
    calls = host[host["correlation"] >= 0]
    owner = innermost_enclosing(profile, calls["index"].to_numpy(), roots["index"].to_numpy())
    direct = np.isin(calls["index"].to_numpy(), roots["index"].to_numpy())
    owner = np.where(direct, calls["index"].to_numpy(), owner)
    launches = pd.DataFrame({"correlation": calls["correlation"].to_numpy(), "root": owner})
    kernels = events.loc[events["stream"] != -1, ["correlation", "ts", "dur", "name"]].merge(
        launches[launches["root"] >= 0], on="correlation")
    kernels = kernels.assign(name=kernels["name"].astype(str)).sort_values(["root", "ts"],
                                                                         kind="stable")
    per_root = kernels.groupby("root").agg(kernels=("name", "size"), names=("name", "|".join),
                                           kernel_us=("dur", "sum"))
    per_root = per_root[per_root["kernels"] >= min_pattern_len]
    if not len(per_root):
        return rank_of(profile), empty
    root_rows = roots.set_index("index").loc[per_root.index]
    return rank_of(profile), pd.DataFrame({
        "root": per_root.index.to_numpy(),
        "pattern": root_rows["name"].astype(str).to_numpy() + "|" + per_root["names"].to_numpy(),
        "kernel_us": per_root["kernel_us"].to_numpy(),
        "root_us": root_rows["dur"].to_numpy()})


def frequent_sequences(profile: Profile, operator_name: str, min_pattern_len: int, rank: int
                       ) -> pd.DataFrame:
    """The rank's patterns (COLUMNS), most frequent first, then by pattern; empty without."""
    parts = dict(p.part for p in host_parts(profile, pattern_instances, operator_name,
                                             min_pattern_len))
    if rank not in parts:
        raise ValueError(f"{profile.source}: no trace of rank {rank}; ranks: {sorted(parts)}.")
    found = parts[rank]
    if not len(found):
        return pd.DataFrame(columns=COLUMNS)
    out = found.groupby("pattern").agg(count=("root", "size"), kernel=("kernel_us", "sum"),
                                       root=("root_us", "sum")).reset_index()
    out.columns = COLUMNS
    return out.sort_values(["count", "pattern"], ascending=[False, True], ignore_index=True)
