"""The ranks of a distributed PyTorch run: one Kineto trace per rank, opened as one run's hosts.

PyTorch writes one trace per process (`rank-3.json.gz`, HTA's corpus `*_rank_3*`, or
tensorboard_trace_handler's `<host>_<pid>.<time>.pt.trace.json.gz`, which names no rank at all).
The rank a trace belongs to is its header's `distributedInfo.rank` (as HTA reads it); a file
name is only a fallback. Where every trace of a run has a rank and no two share one, the hosts
are named `rank N` and ordered by N. Where they cannot be told apart (two traces state the same
rank: two captures of one process, or files of two jobs; a trace with no rank anywhere) the hosts
keep their file names and a warning names the files, so nothing is silently merged or dropped.

Naming happens twice: when the run is listed (`head_rank`: from the first bytes of each file,
so `open_profile(dir, host="rank 1")` works before decoding) and after decoding, where the full
header is known (`name_ranks`), which has the last word: `settle_ranks` in a local open, the
kernel from the workers' `RankFile`s in a Dask open (pod/profile.py), so both name alike.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ProfileError
from .ordering import natural_key
from .trace_data import HostTrace

RANK_PREFIX = "rank "
MAX_APART_PS = 2**61
"""The most two ranks' first events may lie apart (26.7 days): every time of the run then fits
the int64 picosecond columns."""
_NAME_RANK = re.compile(r"(?i)(?:^|[^a-z])rank[-_]?(\d+)(?!\d)")
_HEAD_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)\s*[,}]')


def rank_host(rank: int) -> str:
    """The host name of a rank."""
    return f"{RANK_PREFIX}{rank}"


def name_rank(path: str) -> int | None:
    """The rank a file name states (`rank-3`, `rank_3`, `rank3`), or None."""
    found = _NAME_RANK.findall(posixpath.basename(path))
    return int(found[-1]) if found else None


def head_rank(text: bytes) -> int | None:
    """`distributedInfo.rank` where a trace's header states it before its events (Kineto
    writes it first), from the file's first (inflated) bytes; None where they do not say."""
    found = _HEAD_RANK.search(text)
    return int(found.group(1)) if found else None


def header_rank(trace: HostTrace) -> int | None:
    """`distributedInfo.rank` of a decoded trace's header (kept as a section stat)."""
    for section in trace.sections:
        info = section.stats.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        if type(rank) is int:
            return rank
    return None


def trace_rank(trace: HostTrace) -> int | None:
    """A decoded trace's rank: its header's, else its file name's."""
    rank = header_rank(trace)
    return rank if rank is not None else name_rank(trace.source)


def distinct_ranks(ranks: Sequence[int | None]) -> bool:
    """Whether every file has a rank and no two share one."""
    known = [r for r in ranks if r is not None]
    return len(known) == len(ranks) and len(set(known)) == len(known)


@dataclass(frozen=True)
class RankFile:
    """What naming a run's ranks reads of one decoded trace: small, so a Dask worker sends it
    to the kernel in its host's summary and the kernel names the ranks as a local open does."""

    source: str
    rank: int | None  # trace_rank
    first_ps: int | None  # its first event on its file's clock, ps; None: it has no events


@dataclass(frozen=True)
class RankNames:
    """The hosts of a run's ranks: each file's host name (in the files' order), the files'
    positions in host order, and the warning for ranks that cannot be told apart."""

    hosts: list[str]
    order: list[int]
    warning: str | None


def rank_file(trace: HostTrace) -> RankFile:
    """What naming reads of a decoded trace (its times as decoded, before a Profile moves them)."""
    first = trace.base_ns * 1000 + int(trace.start_ps.min()) if trace.n_events else None
    return RankFile(trace.source, trace_rank(trace), first)


def name_ranks(files: Sequence[RankFile], file_hosts: Sequence[str]) -> RankNames | None:
    """The ranks' host names and order (see the module doc), or None where the files are not
    the ranks of a distributed run (JAX's per-host traces, a single file): they keep their
    names. `file_hosts` are the names the files give (kept where ranks cannot be told apart)."""
    ranks = [f.rank for f in files]
    if len(files) < 2 or all(r is None for r in ranks):
        return None
    check_one_run(files)
    if distinct_ranks(ranks):
        return RankNames([rank_host(r) for r in ranks],
                         sorted(range(len(files)), key=ranks.__getitem__), None)
    order = sorted(range(len(files)), key=lambda k: natural_key(file_hosts[k]))
    return RankNames(list(file_hosts), order, _undistinguished([files[k] for k in order]))


def settle_ranks(traces: list[HostTrace], file_hosts: Sequence[str]) -> list[HostTrace]:
    """The decoded Kineto traces of one run named and ordered by rank (`name_ranks`), the
    warning, if any, on the first."""
    named = name_ranks([rank_file(t) for t in traces], file_hosts)
    if named is None:
        return traces
    for trace, host in zip(traces, named.hosts, strict=True):
        trace.host = host
    ordered = [traces[k] for k in named.order]
    if named.warning:
        ordered[0].warnings.append(named.warning)
    return ordered


def check_one_run(files: Sequence[RankFile]) -> None:
    """Refuses traces too far apart in time to be one run's ranks (their common timeline would
    not fit int64 picoseconds): files of different jobs put in one directory."""
    timed = [f for f in files if f.first_ps is not None]
    if len(timed) < 2:
        return
    first = min(timed, key=lambda f: f.first_ps)
    last = max(timed, key=lambda f: f.first_ps)
    apart = last.first_ps - first.first_ps
    if apart > MAX_APART_PS:
        raise ProfileError(
            f"{posixpath.basename(first.source)} and {posixpath.basename(last.source)} start "
            f"{apart / 86_400e12:.0f} days apart, so they are not the ranks of one run; open "
            "each on its own, or put the traces of one run in a directory of their own.")


def _undistinguished(files: Sequence[RankFile]) -> str:
    """The warning that says which traces share a rank or have none."""
    by_rank: dict[int, list[str]] = defaultdict(list)
    for f in files:
        if f.rank is not None:
            by_rank[f.rank].append(posixpath.basename(f.source))
    said = [f"rank {r} is stated by {', '.join(names)}" for r, names in sorted(by_rank.items())
            if len(names) > 1]
    unranked = [posixpath.basename(f.source) for f in files if f.rank is None]
    if unranked:
        said.append(f"{', '.join(unranked)} state{'s' if len(unranked) == 1 else ''} no rank "
                    "(no distributedInfo.rank in the header, none in the file name)")
    return ("the ranks of these PyTorch traces cannot be told apart: " + "; ".join(said)
            + ". Each file is its own host, named by its file; put the traces of one run, one "
            "per rank, in a directory of their own to open them as ranks.")
