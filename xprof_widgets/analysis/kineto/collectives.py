"""The collectives one rank ran: each communication kernel with its kind, size and group.

A Kineto trace states a collective in up to three places, and traces of different PyTorch
versions fill different ones:

- the kernel itself (PyTorch 2.1+): `Collective name`, `In msg nelems`, `Out msg nelems`,
  `dtype`, `Group size`, `Process Group Name`, `Process Group Ranks`;
- the `record_param_comms` op around the launch, with the same args (PyTorch 2.0+);
- the `nccl:<kind>` annotation around the launch (older traces, PARAM's DLRM run of 2023):
  only `Input Dims` and `Input type` of the tensor sent (an all-gather's output is that times
  the group size).

Each kernel of a communication family (kernel_families.COMMUNICATION_FAMILIES) is one instance;
its fields come from the first place that has them, in that order, the launch's enclosing op and
annotation found through the kernel's `correlation`. Its kind falls back to the kernel's name
(`ncclKernel_AllReduce_*`, DeepEP's dispatch and combine: all-to-all), else `other`. Its size
is what nccl-tests calls S (PERFORMANCE.md): the larger of the elements in and out times the
element size, so the whole output of an all-gather and the whole input of a reduce-scatter.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..kernel_families import communication_family
from . import (
    KERNELS,
    distributed_info,
    events_of,
    innermost_enclosing,
    int_stat,
    rank_of,
)
from .gpu_time import host_correlations

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
         "gather", "scatter", "send_recv", "barrier")
"""The collective kinds, as NCCL and torch.distributed name them; anything else is `other`."""
OTHER = "other"
_KIND_PATTERNS = (
    ("all_reduce", r"allreduce|crossdevicereduce|lamport|multimem"),
    ("all_gather", r"allgather"),
    ("reduce_scatter", r"reducescatter"),
    ("all_to_all", r"alltoall|dispatch|combine"),
    ("broadcast", r"broadcast|bcast"),
    ("send_recv", r"sendrecv|send|recv"),
    ("barrier", r"barrier"),
    ("gather", r"gather"),
    ("scatter", r"scatter"),
    ("reduce", r"reduce"),
)
"""First match wins, on the name lowercased with everything but letters and digits removed."""
BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
"""Bus bandwidth over algorithm bandwidth for n ranks (NVIDIA nccl-tests, doc/PERFORMANCE.md
and the *GetBw functions of its src/*.cu): what makes the figure comparable with the link's
speed whatever the collective and the number of ranks."""
ARGS = ("Collective name", "dtype", "Process Group Name", "Process Group Ranks")
INT_ARGS = ("In msg nelems", "Out msg nelems", "Group size", "Seq")
COLUMNS = ["rank", "kind", "family", "group", "group_ranks", "group_size", "seq", "start_ps",
           "end_ps", "size_bytes", "dtype", "name", "track", "in_track"]
"""One row per collective instance on a rank: times on the host's own clock (ps after its
first event), size NaN where no place states it, group_size 0 and seq -1 where unstated;
`track` and `in_track` (the event's place in its track) name the kernel event."""
_ELEMENT_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
                  "bfloat16": 2, "long": 8, "longint": 8, "int64": 8, "int": 4, "int32": 4,
                  "short": 2, "shortint": 2, "int16": 2, "char": 1, "signedchar": 1, "int8": 1,
                  "byte": 1, "unsignedchar": 1, "uint8": 1, "bool": 1, "complexfloat": 8,
                  "complexhalf": 4, "complexdouble": 16}
"""Bytes per element by the names PyTorch writes: `dtype` (`Float`, `BFloat16`, `Long`) and
`Input type` (`float`, `c10::Half`, `long int`); float8 kinds are one byte."""


def _compact(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@lru_cache(maxsize=4096)
def collective_kind(text: object) -> str | None:
    """The kind a collective's or kernel's name says (KINDS, `other` for a name that names no
    kind but does name an NCCL collective), None for an empty name (memoized: a trace repeats
    few names)."""
    if not isinstance(text, str) or not text:
        return None
    compact = _compact(text.removeprefix("nccl:"))
    return next((kind for kind, pattern in _KIND_PATTERNS if re.search(pattern, compact)), OTHER)


@lru_cache(maxsize=256)
def element_bytes(dtype: object) -> int | None:
    """Bytes per element of a PyTorch dtype name, None where unknown."""
    if not isinstance(dtype, str):
        return None
    compact = _compact(dtype).removeprefix("c10")
    return 1 if compact.startswith("float8") else _ELEMENT_BYTES.get(compact)


def bus_factor(kind: str, ranks: int) -> float:
    """busbw / algbw of a collective kind on `ranks` ranks (BUS_FACTOR); NaN where it has none
    (a barrier, other kernels, an unknown group size)."""
    rule = BUS_FACTOR.get(kind)
    return float(rule(ranks)) if rule is not None and ranks > 0 else float("nan")


def bus_factors(kinds: pd.Series, ranks: pd.Series) -> np.ndarray:
    """`bus_factor` of each (kind, ranks) pair, computed once per distinct pair."""
    pairs = pd.DataFrame({"kind": kinds.to_numpy(object), "ranks": ranks.to_numpy(np.int64)})
    distinct = pairs.drop_duplicates()
    factor = [bus_factor(k, n) for k, n in distinct.itertuples(index=False)]
    return pairs.merge(distinct.assign(factor=factor), how="left")["factor"].to_numpy(np.float64)


def _launches(profile: Profile, kernels: np.ndarray) -> np.ndarray:
    """The host call (runtime or driver) that launched each kernel, by `correlation`; -1
    where the trace holds none."""
    has_corr, correlation = int_stat(profile, kernels, "correlation")
    calls, call_corr = host_correlations(profile)
    order = np.argsort(call_corr, kind="stable")
    keys, calls = call_corr[order], calls[order]
    if not keys.shape[0]:
        return np.full(kernels.shape[0], -1, np.int64)
    at = np.minimum(np.searchsorted(keys, correlation), keys.shape[0] - 1)
    return np.where(has_corr & (keys[at] == correlation), calls[at], -1)


def _around(profile: Profile, launches: np.ndarray, named: np.ndarray) -> np.ndarray:
    """The innermost host event of the `named` metadata rows around each launch; -1 if none."""
    candidates = np.flatnonzero(named[profile.meta])
    out = np.full(launches.shape[0], -1, np.int64)
    known = launches >= 0
    if candidates.shape[0] and known.any():
        out[known] = innermost_enclosing(profile, launches[known], candidates)
    return out


def _fields(profile: Profile, places: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Each arg of ARGS (objects) and INT_ARGS (float, NaN where absent) from the first place
    (event ids, -1: none) that has it."""
    n = places[0].shape[0]
    out: dict[str, np.ndarray] = {name: np.full(n, None, object) for name in ARGS}
    out.update({name: np.full(n, np.nan) for name in INT_ARGS})
    for events in places:
        here = np.flatnonzero(events >= 0)
        for name in ARGS:
            values = profile.stat_column(events[here], name)
            fill = pd.notna(values) & pd.isna(out[name][here])
            out[name][here[fill]] = values[fill]
        for name in INT_ARGS:
            has, values = int_stat(profile, events[here], name)
            fill = has & np.isnan(out[name][here])
            out[name][here[fill]] = values[fill]
    return out


def _dims_bytes(profile: Profile, annotations: np.ndarray) -> np.ndarray:
    """The size of the tensor an `nccl:<kind>` annotation names (`Input Dims`, `Input type`
    of its first input), in bytes; NaN where unstated."""
    out = np.full(annotations.shape[0], np.nan)
    here = np.flatnonzero(annotations >= 0)
    dims = profile.stat_column(annotations[here], "Input Dims")
    types = profile.stat_column(annotations[here], "Input type")
    for k, d, t in zip(here.tolist(), dims.tolist(), types.tolist(), strict=True):
        shape = d[0] if isinstance(d, list) and d and isinstance(d[0], list) else None
        size = element_bytes(t[0] if isinstance(t, list) and t else None)
        if shape is not None and size is not None and all(type(x) is int for x in shape):
            out[k] = float(np.prod(shape, dtype=np.float64)) * size
    return out


def collective_part(profile: Profile) -> pd.DataFrame:
    """One host's collective instances (COLUMNS), in order of start (a per-host part:
    analysis/hosts.py)."""
    names = profile.metadata["name"].to_numpy(dtype=object)
    family = np.array([communication_family(str(n)) for n in names], dtype=object)
    kernels = events_of(profile, KERNELS, "device")
    kernels = kernels[pd.notna(family[profile.meta[kernels]])]
    kernels = kernels[np.argsort(profile.start_ps[kernels], kind="stable")]
    launches = _launches(profile, kernels)
    text = names.astype(str)
    op = _around(profile, launches, text == "record_param_comms")
    annotation = _around(profile, launches, np.char.startswith(text, "nccl:"))
    args = _fields(profile, [kernels, op])
    kind = [collective_kind(c) or collective_kind(names[profile.meta[a]] if a >= 0 else None)
            or collective_kind(str(names[profile.meta[k]]))
            for c, a, k in zip(args["Collective name"].tolist(), annotation.tolist(),
                               kernels.tolist(), strict=True)]
    per_element = np.array([element_bytes(d) or np.nan for d in args["dtype"].tolist()], float)
    size = np.fmax(args["In msg nelems"], args["Out msg nelems"]) * per_element
    group_size = args["Group size"]
    group_size = np.where(np.isnan(group_size), distributed_info(profile, "world_size"),
                          group_size)
    gathered = np.where(np.array(kind, dtype=object) == "all_gather", group_size, 1)
    size = np.where(np.isnan(size), _dims_bytes(profile, annotation) * gathered, size)
    track = profile.track_of(kernels)
    start = profile.start_ps[kernels]
    firsts = profile.built_tracks["first_event"].to_numpy(np.int64)
    return pd.DataFrame({
        "rank": np.full(kernels.shape[0], rank_of(profile), np.int64),
        "kind": np.array(kind, dtype=object), "family": family[profile.meta[kernels]],
        "group": [str(g) if g is not None else "" for g in args["Process Group Name"].tolist()],
        "group_ranks": [_ranks_text(r) for r in args["Process Group Ranks"].tolist()],
        "group_size": group_size.astype(np.int64),
        "seq": np.nan_to_num(args["Seq"], nan=-1).astype(np.int64),
        "start_ps": start, "end_ps": start + profile.duration_ps[kernels],
        "size_bytes": size, "dtype": [str(d) if d is not None else "" for d in args["dtype"]],
        "name": names[profile.meta[kernels]].astype(str), "track": track.astype(np.int64),
        "in_track": kernels - firsts[track]}, columns=COLUMNS)


def _ranks_text(ranks: object) -> str:
    """`Process Group Ranks` as one text whether the trace wrote a list or its JSON."""
    if ranks is None:
        return ""
    if isinstance(ranks, str):
        try:
            ranks = json.loads(ranks)
        except ValueError:
            return ranks
    return json.dumps(ranks, separators=(",", ":")) if isinstance(ranks, list) else str(ranks)
