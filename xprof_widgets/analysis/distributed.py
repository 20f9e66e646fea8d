"""A distributed run seen whole: where each rank's GPU time goes, what its collectives moved at
what bandwidth, and who kept the others waiting.

- Per rank, the GPU's kernel time (first work to last, HTA's span) split into compute alone,
  compute overlapping communication, exposed communication (communicating while not
  computing), other work alone (copies, memsets) and idle: gpu_time's HTA breakdowns, so the
  overlap share is HTA's get_comm_comp_overlap and idle and compute are its temporal
  breakdown's.
- Per collective kind and process group (collectives.py): count, size, time, and nccl-tests'
  algorithm bandwidth (size / time) and bus bandwidth (times collectives.BUS_FACTOR), from each
  rank's own kernel time, wait included, as a profiler sees it.
- Skew: collectives of one process group run in the same order on every rank (NCCL requires it),
  so the i-th instance of a group on each rank is one collective (its `Seq` arg where every
  instance states one). Its ranks' kernel starts on the run's one clock tell who arrived last;
  every other rank's kernel waits inside for it (`waited_us`: the last start minus its own,
  at most its kernel time). Send/recv and other kernels are point to point: not matched. Where
  the ranks disagree on what the i-th collective is (its kind, or its size but for all-to-all,
  whose splits may differ by rank) the traces do not start at the same collective or were
  filtered: it is left unmatched and counted (`mismatched`), not given a skew. Ranks are told
  apart by host: traces that state the same rank (profile/ranks.py keeps them as hosts named by
  their files) stay apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile
from .hosts import host_parts
from .kineto.collectives import COLUMNS, bus_factors, collective_part
from .kineto.gpu_time import gpu_work, overlap_of, temporal_breakdown

RANK_PARTS = ("compute_us", "overlap_us", "exposed_communication_us", "other_us", "idle_us")
"""The parts of a rank's kernel time, in the order the bars stack them."""
RANK_COLUMNS = ["rank", "host", "kernel_us", *RANK_PARTS, "communication_us",
                "comp_comm_overlap_pctg", "waiting_us"]
MATCHED = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                     "reduce", "gather", "scatter", "barrier"})
"""Kinds every rank of a group joins, whose i-th instances are matched across ranks."""
INSTANCE_COLUMNS = ["rank", "host", "kind", "family", "group", "group_ranks", "group_size",
                    "seq", "instance", "start_us", "duration_us", "size_bytes", "dtype",
                    "algbw_gbps", "busbw_gbps", "late_us", "waited_us", "name", "event"]
SKEW_COLUMNS = ["instance", "kind", "group", "seq", "ranks", "group_size", "complete",
                "first_start_us", "spread_us", "last_rank", "last_host", "wait_caused_us",
                "end_spread_us", "size_bytes", "transfer_us", "busbw_no_wait_gbps"]
KIND_COLUMNS = ["kind", "family", "group", "group_size", "count", "ranks", "mean_size_mib",
                "total_size_mib", "total_us", "mean_us", "wait_us", "algbw_gbps", "busbw_gbps"]
EDGE_COLUMNS = ["src", "dst", "label", "instance", "from_host", "to_host", "wait_us"]
STRAGGLER_COLUMNS = ["rank", "host", "instances", "last_arrivals", "wait_caused_us",
                     "wait_caused_pct", "mean_late_us", "waiting_us"]
_MIB = 2**20


def rank_part(profile: Profile) -> tuple[dict, pd.DataFrame, str | None]:
    """One host's kernel-time split (RANK_PARTS, us), collectives (collectives.COLUMNS) and the
    note saying why its collectives were left out, if they were: a per-host part
    (analysis/hosts.py)."""
    work = gpu_work(profile)
    split = temporal_breakdown(work)
    communication, both = overlap_of(work)
    exposed = communication - both
    parts = {"rank": work.rank, "kernel_us": split["kernel"],
             "compute_us": split["compute"] - both, "overlap_us": both,
             "exposed_communication_us": exposed,
             "other_us": split["kernel"] - split["idle"] - split["compute"] - exposed,
             "idle_us": split["idle"], "communication_us": communication}
    row = {k: v if k == "rank" else v / PS_PER_US for k, v in parts.items()}
    row["comp_comm_overlap_pctg"] = 100 * both / communication if communication else np.nan
    try:
        return row, collective_part(profile), None
    except Exception as exc:  # noqa: BLE001 - a derived row family: the rank's split stays
        return row, pd.DataFrame(columns=COLUMNS), (
            f"{profile.source}: its collectives are left out of the Distributed view "
            f"({type(exc).__name__}: {exc}).")


@dataclass(frozen=True)
class DistributedAnalysis:
    """The ranks' breakdown (`ranks`, RANK_COLUMNS), every collective instance of every rank
    (`instances`, INSTANCE_COLUMNS; times on the run's clock, us after its first event), and
    how many collectives the ranks disagree on (`mismatched`, left unmatched)."""

    ranks: pd.DataFrame
    instances: pd.DataFrame
    source: str
    mismatched: int = 0

    def skew(self) -> pd.DataFrame:
        """One row per matched collective (SKEW_COLUMNS): how many ranks ran it of its group
        (`complete` where all of it), the spread of their arrivals, the last to
        arrive, the waiting it caused (summed over the others), the spread of their ends (near
        0 where the ranks' clocks agree), and its bus bandwidth once all had arrived (on the
        last arrival's kernel time)."""
        mine = self.instances[self.instances["instance"] >= 0]
        if not len(mine):
            return pd.DataFrame(columns=SKEW_COLUMNS)
        end = mine["start_us"] + mine["duration_us"]
        last = mine.loc[mine.groupby("instance")["start_us"].idxmax()].set_index("instance")
        grouped = mine.assign(end_us=end).groupby("instance")
        out = pd.DataFrame({
            "kind": last["kind"], "group": last["group"], "seq": last["seq"],
            "ranks": grouped.size(), "group_size": last["group_size"],
            "first_start_us": grouped["start_us"].min(),
            "spread_us": grouped["start_us"].max() - grouped["start_us"].min(),
            "last_rank": last["rank"], "last_host": last["host"],
            "wait_caused_us": grouped["waited_us"].sum(),
            "end_spread_us": grouped["end_us"].max() - grouped["end_us"].min(),
            "size_bytes": last["size_bytes"], "transfer_us": last["duration_us"]})
        out["complete"] = out["ranks"] >= out["group_size"]
        factor = bus_factors(out["kind"], out["group_size"])
        out["busbw_no_wait_gbps"] = _gbps(out["size_bytes"], out["transfer_us"]) * factor
        return out.reset_index().sort_values("first_start_us", kind="stable")[SKEW_COLUMNS] \
            .reset_index(drop=True)

    def by_kind(self) -> pd.DataFrame:
        """One row per collective kind, family and process group (KIND_COLUMNS): instances
        (over every rank), ranks, sizes, kernel time, the time its kernels waited for a late
        rank, and nccl-tests' algorithm and bus bandwidth over the instances of known size
        (their bytes over their kernel time)."""
        rows = self.instances
        if not len(rows):
            return pd.DataFrame(columns=KIND_COLUMNS)
        sized = rows["size_bytes"].notna()
        factor = bus_factors(rows["kind"], rows["group_size"])
        frame = rows.assign(sized_us=rows["duration_us"].where(sized, 0.0),
                            bytes=rows["size_bytes"].fillna(0.0),
                            bus_bytes=rows["size_bytes"].fillna(0.0) * factor)
        keys = ["kind", "family", "group", "group_size"]
        g = frame.groupby(keys, sort=False)
        out = g.agg(count=("host", "size"), ranks=("host", "nunique"),
                    total_bytes=("bytes", "sum"), sized=("size_bytes", "count"),
                    total_us=("duration_us", "sum"), wait_us=("waited_us", "sum"),
                    sized_us=("sized_us", "sum"), bus_bytes=("bus_bytes", "sum")).reset_index()
        known = out["sized"] > 0
        out["total_size_mib"] = (out["total_bytes"] / _MIB).where(known)
        out["mean_size_mib"] = (out["total_bytes"] / out["sized"] / _MIB).where(known)
        out["mean_us"] = out["total_us"] / out["count"]
        out["algbw_gbps"] = _gbps(out["total_bytes"], out["sized_us"]).where(known)
        out["busbw_gbps"] = _gbps(out["bus_bytes"], out["sized_us"]).where(known)
        return out.sort_values("total_us", ascending=False, kind="stable")[KIND_COLUMNS] \
            .reset_index(drop=True)

    def stragglers(self) -> pd.DataFrame:
        """One row per rank (STRAGGLER_COLUMNS): the matched collectives it ran, how often it
        arrived last (where the arrivals spread), the waiting it caused the others then (and
        its share of all such waiting), how late it arrived on average, and how long its own
        kernels waited for others."""
        rows = self.instances[self.instances["instance"] >= 0]
        skew = self.skew()
        spread = skew[skew["spread_us"] > 0]
        out = self.ranks[["rank", "host"]].copy()
        by_host = rows.groupby("host")
        out["instances"] = out["host"].map(by_host.size()).fillna(0).astype(np.int64)
        out["last_arrivals"] = out["host"].map(spread.groupby("last_host").size()) \
            .fillna(0).astype(np.int64)
        caused = out["host"].map(spread.groupby("last_host")["wait_caused_us"].sum()).fillna(0.0)
        out["wait_caused_us"] = caused
        total = float(caused.sum())
        out["wait_caused_pct"] = 100 * caused / total if total else 0.0
        out["mean_late_us"] = out["host"].map(by_host["late_us"].mean())
        out["waiting_us"] = out["host"].map(by_host["waited_us"].sum()).fillna(0.0)
        return out[STRAGGLER_COLUMNS].reset_index(drop=True)

    def collective_edges(self, kind: str | None = None) -> pd.DataFrame:
        """Edges linking each matched collective's kernels across ranks (EDGE_COLUMNS), for a
        Trace Viewer's `overlay_flows`: from every rank's kernel to the last arrival's, whose
        start every other kernel waits for inside (`wait_us`: the last start minus its own).
        One star per collective rather than a chain in arrival order, so each arrow is one
        rank's wait. `kind` keeps one kind (`all_reduce`, ...)."""
        rows = self.instances[self.instances["instance"] >= 0]
        if kind is not None:
            rows = rows[rows["kind"] == kind]
        if not len(rows):
            return pd.DataFrame(columns=EDGE_COLUMNS)
        last = rows.loc[rows.groupby("instance")["start_us"].idxmax()].set_index("instance")
        to = last.reindex(rows["instance"].to_numpy())
        out = pd.DataFrame({
            "src": rows["event"].to_numpy(np.int64), "dst": to["event"].to_numpy(np.int64),
            "label": (rows["kind"] + " #" + rows["instance"].astype(str) + " (last: "
                      + to["host"].to_numpy(object) + ")").to_numpy(object),
            "instance": rows["instance"].to_numpy(np.int64),
            "from_host": rows["host"].to_numpy(object), "to_host": to["host"].to_numpy(object),
            "wait_us": to["start_us"].to_numpy(np.float64) - rows["start_us"].to_numpy(np.float64)})
        return out[out["src"] != out["dst"]].sort_values(["instance", "src"], kind="stable") \
            .reset_index(drop=True)[EDGE_COLUMNS]


def analyze_distributed(profile: Profile) -> DistributedAnalysis:
    """Every rank's part combined (see the module doc); computed once per profile."""
    return profile.memo(("distributed",), lambda: _analyze(profile))


def distributed_available(profile: Profile) -> bool:
    """Whether the view has something to show: two or more ranks with GPU work, or any
    collective (the Overview computes the families anyway)."""
    from .kineto.gpu_time import communication_by_family, host_works

    if len(communication_by_family(profile)):
        return True
    return len(profile.hosts) > 1 and sum(w.start.shape[0] > 0 for w in host_works(profile)) > 1


def _analyze(profile: Profile) -> DistributedAnalysis:
    parts = host_parts(profile, rank_part)
    rows = [{**p.part[0], "host": p.host} for p in parts if p.part[0]["kernel_us"] > 0]
    ranks = pd.DataFrame(rows, columns=[c for c in RANK_COLUMNS if c != "waiting_us"])
    tracks = profile.built_tracks["first_event"].to_numpy(np.int64)
    frames = []
    for p in parts:
        frame, note = p.part[1], p.part[2]
        if note and note not in profile.warnings:  # a shared profile: said once
            profile.warnings.append(note)
        frames.append(frame.assign(
            host=p.host, start_ps=frame["start_ps"] + p.shift_ps,
            end_ps=frame["end_ps"] + p.shift_ps,
            event=tracks[frame["track"].to_numpy(np.int64) + p.track_base] + frame["in_track"]))
    instances, mismatched = _instances(pd.concat(frames, ignore_index=True) if frames
                                       else pd.DataFrame(columns=[*COLUMNS, "host", "event"]))
    ranks["waiting_us"] = ranks["host"].map(instances.groupby("host")["waited_us"].sum()) \
        .fillna(0.0)
    ranks = ranks[RANK_COLUMNS].astype({"rank": np.int64, "host": object,
                                        **dict.fromkeys(RANK_COLUMNS[2:], np.float64)})
    return DistributedAnalysis(ranks.reset_index(drop=True), instances, profile.source,
                               mismatched)


def _instances(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The collectives of every rank with their matched instance (-1: not matched), lateness
    and wait, bandwidths (INSTANCE_COLUMNS); and how many instances the ranks disagree on."""
    rows = rows.sort_values(["rank", "host", "start_ps"], kind="stable").reset_index(drop=True)
    rows = rows.astype({"rank": np.int64, "group_size": np.int64, "seq": np.int64,
                        "start_ps": np.int64, "end_ps": np.int64, "size_bytes": np.float64})
    ranks_seen = rows["host"].nunique()
    rows["group_size"] = rows["group_size"].where(rows["group_size"] > 0, ranks_seen)
    rows["start_us"] = rows["start_ps"] / PS_PER_US
    rows["duration_us"] = (rows["end_ps"] - rows["start_ps"]) / PS_PER_US
    algbw = _gbps(rows["size_bytes"], rows["duration_us"])
    factor = bus_factors(rows["kind"], rows["group_size"])
    rows["algbw_gbps"], rows["busbw_gbps"] = algbw, algbw * factor
    rows["instance"], mismatched = _agreed(rows, _match(rows))
    matched = rows["instance"] >= 0
    by = rows[matched].groupby("instance")["start_ps"]
    first = rows["instance"].map(by.min())
    last = rows["instance"].map(by.max())
    rows["late_us"] = ((rows["start_ps"] - first) / PS_PER_US).where(matched)
    rows["waited_us"] = np.minimum((last - rows["start_ps"]) / PS_PER_US,
                                   rows["duration_us"]).where(matched, 0.0)
    return rows[INSTANCE_COLUMNS], mismatched


def _match(rows: pd.DataFrame) -> np.ndarray:
    """Each row's instance id: rows of a matched kind sharing process group and position (its
    `Seq` where every row of the group states one, else its order on its rank)."""
    group = rows["group"].astype(str) + "\x00" + rows["group_ranks"].astype(str)
    collective = rows["kind"].isin(MATCHED).to_numpy()
    order = rows[collective].groupby([group[collective], rows["host"][collective]]).cumcount()
    stated = rows["seq"][collective].ge(0).groupby(group[collective]).transform("all")
    position = np.where(stated, rows["seq"][collective], order)
    out = np.full(len(rows), -1, np.int64)
    if collective.any():
        keys = pd.MultiIndex.from_arrays([group[collective].to_numpy(), position])
        out[collective] = pd.factorize(keys, sort=False)[0]
    return out


def _agreed(rows: pd.DataFrame, instance: np.ndarray) -> tuple[np.ndarray, int]:
    """The instances whose ranks agree on the kind and (but for all-to-all) the size; the
    others become -1, and their number is returned."""
    matched = instance >= 0
    if not matched.any():
        return instance, 0
    mine = rows[matched].assign(instance=instance[matched])
    g = mine.groupby("instance")
    sizes = g["size_bytes"].nunique(dropna=False)
    agree = (g["kind"].nunique() == 1) & ((sizes == 1) | (g["kind"].first() == "all_to_all"))
    bad = agree.index[~agree.to_numpy()]
    out = np.where(np.isin(instance, bad), -1, instance)
    return out, int(bad.shape[0])


def _gbps(size_bytes: pd.Series, us: pd.Series) -> pd.Series:
    """Bytes over microseconds in GB/s (10^9 bytes a second, as nccl-tests); NaN at 0 us."""
    return size_bytes / (us * 1e3).where(us > 0)
