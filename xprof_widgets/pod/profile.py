"""`PodProfile`: a multi-host run decoded on Dask workers; the kernel holds only tables.

Each host's file is decoded on a worker by `client.submit(decode_host, ...)` (one task per host,
`pure=False`, its key naming run and host) into a single-host `Profile` that stays in that
worker's memory; the PodProfile holds the futures and a summary of every host (its sections and
tracks, where it sits on the clock). Its own tables number sections, tracks, events and names
exactly as a local `Profile` of the same hosts does (hosts one after the other, in order), so
every id a tool shows means the same thing either way. A run of PyTorch ranks is named and
ordered from the ranks the workers read, as a local open names them (profile/ranks.py).

Analyses reach the hosts through `map_hosts` (analysis/hosts.py): the per-host part runs as a
task next to its host's data and only the part comes back. The Trace Viewer talks to one
`HostServer` actor per host it shows (pod/trace.py), for answers in milliseconds.

Failures: a worker that dies takes its hosts' data with it; Dask decodes them again on another
worker, since the futures are still held, and an actor is made anew next to the new copy. A host
that cannot be decoded (a bad file, a worker killed by it again and again: KilledWorker) raises a
ProfileError naming the host; every wait is bounded (`timeout_s`), reports the hosts done, and
ends sooner, naming the pending hosts and why, where nothing runs on the cluster (pod/watch.py).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..analysis.hosts import HostPart
from ..errors import ProfileError
from ..profile.locate import HostFile, host_name
from ..profile.model import PS_PER_US
from ..profile.open import open_host
from ..profile.ranks import name_ranks
from .watch import Progress, ProgressLine, Watch, listed
from .worker import (
    HostServer,
    HostSummary,
    busy_rows,
    decode_host,
    hlo_bytes,
    rename_host,
    summarize_host,
)

T = TypeVar("T")
DECODE_TIMEOUT_S = 1800.0
"""Longest wait for the hosts to be decoded (a pod's hosts queue on a few workers)."""
_HOLDERS_TTL_S = 5.0
REQUEST_TIMEOUT_S = 300.0
"""Longest wait for one analysis part or trace request (a first window builds the index)."""


class NotDistributed(ProfileError, AttributeError):
    """What a tool that reads events in the kernel says on a multi-host PodProfile."""


@dataclass(frozen=True)
class PodHost:
    """One host of the run: its file, the future of its decoded Profile, its summary."""

    file: HostFile
    future: Any
    summary: HostSummary


@dataclass(frozen=True)
class HostFrame:
    """Where one host's own ids and times sit in the PodProfile's."""

    host: str
    position: int
    shift_ps: int
    event_base: int
    track_base: int
    section_base: int
    name_base: int


def open_pod(client: Any, files: Sequence[HostFile], source: str, run: str | None = None,
             runs: pd.DataFrame | None = None, timeout_s: float = DECODE_TIMEOUT_S,
             progress: Progress | None = None, stall_s: float | None = None) -> PodProfile:
    """Decodes every host on the cluster of `client` and waits for their summaries; the ranks
    of a PyTorch run are named and ordered from the decoded headers, as a local open names
    them. `progress` gets the hosts done of all (default: a line on stderr); `stall_s` is how
    long no host may finish before the wait asks the cluster why (pod/watch.py)."""
    if not files:
        raise ProfileError(f"{source}: no host profile to open.")
    waiting = {"progress": progress or ProgressLine(), "stall_s": stall_s}
    token = uuid.uuid4().hex[:8]
    decoded = {f.host: client.submit(decode_host, f, pure=False,
                                     key=f"xprof-decode-{run or 'run'}-{f.host}-{token}")
               for f in files}
    summaries = _summaries(client, decoded, "decoding", timeout_s, waiting)
    hosts = [PodHost(f, decoded[f.host], summaries[f.host]) for f in files]
    if all(f.format == "chrome" for f in files):
        hosts = _name_ranks(client, hosts, timeout_s, waiting)
    return PodProfile(client, hosts, source, run, runs, owner=True)


def _summaries(client: Any, profiles: dict[str, Any], doing: str, timeout_s: float,
               waiting: dict[str, Any]) -> dict[str, HostSummary]:
    """The hosts' summaries, each made next to its decoded Profile (once decoded, so the task
    is bound to the worker holding it: next_to)."""
    token = uuid.uuid4().hex[:8]  # a key of its own: a renamed host may take another's name
    gather(client, profiles, doing, timeout_s, results=False, **waiting)
    holders = client.who_has(list(profiles.values()))
    return gather(client, {h: next_to(client, summarize_host, fut, holders=holders,
                                      key=f"xprof-summary-{h}-{token}")
                           for h, fut in profiles.items()}, doing, timeout_s,
                  stall_s=waiting["stall_s"])  # the hosts done were told as they decoded


def _name_ranks(client: Any, hosts: list[PodHost], timeout_s: float,
                waiting: dict[str, Any]) -> list[PodHost]:
    """The hosts of a run of Chrome traces named and ordered as `settle_ranks` does locally,
    from the ranks the workers read (profile/ranks.py). The listing named them from each
    file's first bytes; a host whose decoded header says otherwise is renamed on its worker."""
    named = name_ranks([h.summary.rank_file for h in hosts],
                       [host_name(h.file.path) for h in hosts])
    if named is None:
        return hosts
    token = uuid.uuid4().hex[:8]
    holders = client.who_has([h.future for h in hosts])
    moved = {new: next_to(client, rename_host, h.future, new, holders=holders,
                          key=f"xprof-rename-{new}-{token}")
             for h, new in zip(hosts, named.hosts, strict=True) if new != h.file.host}
    summaries = _summaries(client, moved, "naming the ranks", timeout_s, waiting) if moved \
        else {}
    hosts = [PodHost(replace(h.file, host=new), moved[new], summaries[new]) if new in moved
             else h for h, new in zip(hosts, named.hosts, strict=True)]
    hosts = [hosts[k] for k in named.order]
    if named.warning:  # on the first host, as settle_ranks puts it on the first trace
        first = hosts[0]
        hosts[0] = replace(first, summary=replace(
            first.summary, warnings=[*first.summary.warnings, named.warning]))
    return hosts


def next_to(client: Any, fn: Callable[..., Any], held: Any, *args: Any, key: str,
            holders: dict[str, Any] | None = None) -> Any:
    """`fn(held, *args)` as a task bound to the worker holding `held` (a decoded host, or a
    list of those one worker holds). A Profile does not travel between workers (it does not pickle), so
    a task Dask moved to another one (it steals queued tasks from a busy worker) would wait for
    its input forever: seen as a task held by an idle worker on loaded machines. Where the
    holder is not known (it is gone), the task may run anywhere its input is made again."""
    first = held[0] if isinstance(held, list) else held
    where = list((holders if holders is not None else client.who_has([first])).get(first.key, ()))
    return client.submit(fn, held, *args, pure=False, key=key, workers=where or None,
                         allow_other_workers=not where)


def gather(client: Any, futures: dict[str, Any], doing: str, timeout_s: float,
           results: bool = True, progress: Progress | None = None,
           stall_s: float | None = None) -> dict[str, Any]:
    """The futures' results by host (with `results=False`, only waits: a decoded host stays on
    its worker), or a ProfileError naming the host that failed, the hosts that did not finish
    in time, or those nothing on the cluster runs (pod/watch.py: `progress` hears of each host
    done). A result lost with its worker is computed again by Dask (the future is still held)
    and waited for; a task bound to a worker that died (next_to) is named as such when the
    wait stops."""
    from dask.distributed import wait

    watch = Watch(client, doing, len(futures), progress, stall_s)
    deadline = time.monotonic() + timeout_s
    while True:
        left = {h: f for h, f in futures.items() if f.status != "finished"}
        try:
            wait(list(left.values()), return_when="FIRST_COMPLETED",
                 timeout=min(watch.tick_s, max(0.0, deadline - time.monotonic())))
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise ProfileError(
                    f"{doing} did not finish within {timeout_s:g} s on host(s) "
                    f"{listed([h for h, f in futures.items() if not f.done()])}; the cluster "
                    "may have too few workers or too little memory for them (see its "
                    "dashboard), or pass a longer timeout_s.") from None
        _raise_failed(futures, doing)
        left = {h: f for h, f in futures.items() if f.status != "finished"}
        watch.check(len(futures) - len(left), left)
        if not left:
            return {h: f.result() if results else None for h, f in futures.items()}


def _raise_failed(futures: dict[str, Any], doing: str) -> None:
    """A ProfileError for the failed futures, naming each host hit: a dying worker takes its
    queued tasks along."""
    failed = [(h, f) for h, f in futures.items() if f.status in ("error", "cancelled")]
    if not failed:
        return
    future = failed[0][1]
    exc = future.exception() if future.status == "error" else RuntimeError(
        "its task was cancelled")
    hit = [h for h, f in failed if f.status == future.status and type(
        f.exception() if f.status == "error" else exc) is type(exc)]
    raise host_error(listed(hit), doing, exc)


def host_error(host: str, doing: str, exc: BaseException) -> ProfileError:
    if isinstance(exc, ProfileError):
        return ProfileError(f"host {host}: {exc}")
    if type(exc).__name__ == "KilledWorker":
        return ProfileError(
            f"host {host}: {doing} killed every worker that tried it ({exc}); a host's file "
            "may need more memory than a worker has (a worker dying takes the tasks queued on it "
            "along): give workers more memory, or open the host alone with "
            "open_profile(..., host=...).")
    return ProfileError(f"host {host}: {doing} failed on its worker: "
                        f"{type(exc).__name__}: {exc}")


class PodProfile:
    """A run whose hosts were decoded on Dask workers; see the module docstring.

    Tables as on a local `Profile`: `hosts`, `sections`, `tracks`, `hlo_modules`, `runs`;
    `n_events`, `duration_us`. `select(hosts)` gives the PodProfile of some hosts (the suite's
    host picker), `close()` lets the workers drop the hosts.
    """

    def __init__(self, client: Any, hosts: list[PodHost], source: str, run: str | None = None,
                 runs: pd.DataFrame | None = None, timeout_s: float = REQUEST_TIMEOUT_S,
                 owner: bool = False):
        self._memo: dict[tuple, Any] = {}
        self._owner = owner
        self._holder_of: dict[str, str] = {}
        self._holders_at = -math.inf
        self._servers: dict[str, Any] = {}
        self._hlo_cache: dict[int, Any] = {}
        self._local: Any = None
        self.client = client
        self.source = source
        self.run = run
        self.timeout_s = timeout_s
        self._pod_hosts = hosts
        self.hosts = [h.file.host for h in hosts]
        self.runs = runs if runs is not None else pd.DataFrame(
            {"run": [run], "hosts": [list(self.hosts)], "path": [source]})
        self.frames = self._frames()
        summaries = [h.summary for h in hosts]
        self.sections = pd.concat([s.sections for s in summaries], ignore_index=True)
        self.tracks = self._track_table()
        self.hlo_modules = pd.concat([s.hlo_modules for s in summaries], ignore_index=True)
        self.warnings = [w for s in summaries for w in s.warnings]
        self.n_events = int(sum(s.n_events for s in summaries))
        self.duration_us = max(s.end_ps + f.shift_ps for s, f in
                               zip(summaries, self.frames, strict=True)) / PS_PER_US
        self.host_shifts_ps = [f.shift_ps for f in self.frames]
        self._event_bases = np.array([f.event_base for f in self.frames], np.int64)

    # ---- building -------------------------------------------------------------------------
    def _frames(self) -> list[HostFrame]:
        summaries = [h.summary for h in self._pod_hosts]
        if len(summaries) == 1:
            self.origin_ps, self.clock_ps = summaries[0].origin_ps, summaries[0].clock_ps
            clocks = [summaries[0].origin_ps]
        else:  # as Profile places several hosts: the wall clock when every file states it
            on_wall = all(s.states_start for s in summaries)
            clocks = [s.clock_ps if on_wall else s.origin_ps for s in summaries]
            self.origin_ps = self.clock_ps = min(clocks)
        self.origin_ns = self.origin_ps / 1000
        frames, bases = [], np.zeros(4, np.int64)
        for k, (s, clock) in enumerate(zip(summaries, clocks, strict=True)):
            frames.append(HostFrame(s.host, k, int(clock - min(clocks)), *map(int, bases)))
            bases += [s.n_events, len(s.tracks), len(s.sections), s.n_names]
        return frames

    def _track_table(self) -> pd.DataFrame:
        parts = []
        for host, frame in zip(self._pod_hosts, self.frames, strict=True):
            t = host.summary.tracks.copy()
            t.index = t.index + frame.track_base
            t["section_id"] += frame.section_base
            t["first_event"] += frame.event_base
            t["end_event"] += frame.event_base
            t["start_us"] = (t["start_ps"] + frame.shift_ps) / PS_PER_US
            t["end_us"] = (t["end_ps"] + frame.shift_ps) / PS_PER_US
            parts.append(t.drop(columns=["start_ps", "end_ps"]))
        table = pd.concat(parts)
        table.index.name = "track"
        return table

    # ---- the Profile face the analyses use ---------------------------------------------------
    @property
    def built_tracks(self) -> pd.DataFrame:
        """`tracks`: the workers made every host's derived rows when they summarized it."""
        return self.tracks

    @property
    def file_tracks(self) -> pd.DataFrame:
        """The tracks read from the files, as Profile.file_tracks."""
        derived = np.concatenate([h.summary.derived_tracks for h in self._pod_hosts])
        return self.tracks[~derived]

    def derive_rows(self) -> None:
        """Nothing to make: as `built_tracks` says."""

    def memo(self, key: tuple, build: Callable[[], T]) -> T:
        """`build()` once per key, as `Profile.memo`."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def map_hosts(self, part: Callable[..., T], *args: Any) -> list[HostPart[T]]:
        """`part(host_profile, *args)` on every host, each as a task next to its host's data."""
        token = uuid.uuid4().hex[:8]
        name = getattr(part, "__name__", "part")
        holders = self.client.who_has([h.future for h in self._pod_hosts])
        futures = {h.file.host: next_to(self.client, part, h.future, *args, holders=holders,
                                        key=f"xprof-{name}-{h.file.host}-{token}")
                   for h in self._pod_hosts}
        results = gather(self.client, futures, name.strip("_").replace("_", " "), self.timeout_s)
        return [HostPart(f.host, results[f.host], f.shift_ps, f.track_base, f.section_base)
                for f in self.frames]

    def hlo_proto_bytes(self, module: int | str) -> bytes:
        """A module's serialized `xla.HloProto`, fetched from a worker holding a host with it."""
        table = self.hlo_modules
        hit = table[(table["program_id"].astype(str) == str(module)) | (table["name"] == module)
                    | (table["label"] == module)]
        if not len(hit):
            known = ", ".join(table["label"].drop_duplicates())
            raise ProfileError(f"{self.source}: no HLO proto for module {module!r}. The profile "
                               f"carries: {known or 'none'}.")
        host = self._pod_hosts[self.hosts.index(str(hit["host"].iat[0]))]
        future = next_to(self.client, hlo_bytes, host.future, int(hit["program_id"].iat[0]),
                         key=f"xprof-hlo-{host.file.host}-{uuid.uuid4().hex[:8]}")
        return gather(self.client, {host.file.host: future}, "reading an HLO proto",
                      self.timeout_s)[host.file.host]

    def hlo_proto(self, module: int | str) -> Any:
        """A module's `xla.HloProto`, decoded in the kernel (HLO protos are small)."""
        from ..profile.schema import HloProto

        data = self.hlo_proto_bytes(module)
        key = hash(data)
        if key not in self._hlo_cache:
            self._hlo_cache[key] = HloProto.FromString(data)
        return self._hlo_cache[key]

    def select(self, hosts: str | Sequence[str]) -> PodProfile:
        """The PodProfile of some of the hosts (their data stays where it is)."""
        wanted = [hosts] if isinstance(hosts, str) else list(hosts)
        missing = sorted(set(wanted) - set(self.hosts))
        if missing:
            raise ProfileError(f"{self.source}: no host {missing}; hosts: "
                               f"{', '.join(self.hosts)}.")
        chosen = [h for h in self._pod_hosts if h.file.host in wanted]
        return PodProfile(self.client, chosen, self.source, self.run, self.runs, self.timeout_s)

    def track_ids(self, track: int | str | list | None = None) -> np.ndarray:
        """Track ids for an id, a name (`"XLA Ops"` or `"/device:TPU:0/XLA Ops"`), or a list,
        as `Profile.track_ids`."""
        tracks = self.tracks
        if track is None:
            return tracks.index.to_numpy()
        if isinstance(track, (list, tuple, np.ndarray, pd.Index)):
            return np.unique(np.concatenate([self.track_ids(t) for t in track]))
        if isinstance(track, (int, np.integer)):
            if track not in tracks.index:
                raise KeyError(f"no track {track}; tracks are 0..{len(tracks) - 1}")
            return np.array([track])
        full = tracks["section"] + "/" + tracks["name"]
        hits = tracks.index[(tracks["name"] == track) | (full == track)].to_numpy()
        if not hits.shape[0]:
            raise KeyError(f"no track named {track!r}; see PodProfile.tracks for the names")
        return hits

    def frame_of(self, host: str) -> HostFrame:
        return self.frames[self.hosts.index(host)]

    def host_of_events(self, events: np.ndarray) -> np.ndarray:
        """Position (in `hosts`) of the host of each global event id."""
        return np.searchsorted(self._event_bases, np.asarray(events, np.int64), side="right") - 1

    # ---- a host's actor ---------------------------------------------------------------------
    def call(self, host: str, method: str, *args: Any) -> Any:
        """`HostServer.method(*args)` on the host's actor; a lost actor is made again next to
        the host's data (decoded again by Dask if its worker died) and asked once more."""
        for attempt in (0, 1):
            server = self._server(host)
            try:
                return getattr(server, method)(*args).result(timeout=self.timeout_s)
            except (OSError, RuntimeError) as exc:  # the actor's worker is gone
                self._servers.pop(host, None)
                if attempt:
                    raise host_error(host, method, exc) from exc
            except TimeoutError as exc:
                raise ProfileError(f"host {host}: the trace request {method!r} did not finish "
                                   f"within {self.timeout_s:g} s") from exc
        raise AssertionError("unreachable")

    def calls(self, requests: dict[str, tuple[str, tuple]]) -> dict[str, Any]:
        """Several hosts' actor calls at once: {host: (method, args)} -> {host: result}."""
        servers = self._servers_for(list(requests))
        pending = {}
        for host, (method, args) in requests.items():
            try:
                pending[host] = getattr(servers[host], method)(*args)
            except (OSError, RuntimeError):
                self._servers.pop(host, None)
        out = {}
        for host, (method, args) in requests.items():
            try:
                if host not in pending:
                    raise RuntimeError("actor lost")
                out[host] = pending[host].result(timeout=self.timeout_s)
            except (OSError, RuntimeError):
                self._servers.pop(host, None)
                out[host] = self.call(host, method, *args)
            except TimeoutError as exc:
                raise ProfileError(f"host {host}: the trace request {method!r} did not finish "
                                   f"within {self.timeout_s:g} s") from exc
        return out

    def _server(self, host: str) -> Any:
        return self._servers_for([host])[host]

    def _servers_for(self, hosts: list[str]) -> dict[str, Any]:
        """The hosts' actors, the missing ones made at once, each on the worker holding its
        host (decoded again first by Dask if that worker died)."""
        missing = [h for h in hosts if h not in self._servers]
        if missing:
            futures = {h: self._pod_hosts[self.hosts.index(h)].future for h in missing}
            gather(self.client, futures, "decoding", DECODE_TIMEOUT_S, results=False)
            holders = self.client.who_has(list(futures.values()))
            token = uuid.uuid4().hex[:8]
            actors = {}
            for host, future in futures.items():
                where = list(holders.get(future.key, ()))
                actors[host] = self.client.submit(
                    HostServer, future, actor=True, pure=False, workers=where or None,
                    allow_other_workers=not where, key=f"xprof-trace-{host}-{token}")
            self._servers.update(gather(self.client, actors, "starting its trace server",
                                        self.timeout_s))
        return {h: self._servers[h] for h in hosts}

    def busy_rows(self, hosts: list[str], lo_ps: list[int], hi_ps: list[int], px: float
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each host's busy intervals over its [lo, hi] ps (its own clock), gaps of `px` ps or
        more kept: one task per worker for all the hosts it holds, next to their data."""
        holders = self._holders(hosts)
        groups: dict[str, list[int]] = {}
        for k, host in enumerate(hosts):
            groups.setdefault(holders.get(host, ""), []).append(k)
        token = uuid.uuid4().hex[:8]
        futures = {}
        for n, members in enumerate(groups.values()):
            names = [hosts[k] for k in members]
            futures[listed(names)] = next_to(
                self.client, busy_rows, [self._pod_hosts[self.hosts.index(h)].future
                                             for h in names],
                [lo_ps[k] for k in members], [hi_ps[k] for k in members], px,
                key=f"xprof-rows-{n}-{token}")
        answers = gather(self.client, futures, "drawing host rows", self.timeout_s)
        out = {}
        for members, label in zip(groups.values(), futures, strict=True):
            out.update(zip((hosts[k] for k in members), answers[label], strict=True))
        return out

    def _holders(self, hosts: list[str]) -> dict[str, str]:
        """The worker holding each host (asked of the scheduler at most every few seconds)."""
        now = time.monotonic()
        if now - self._holders_at > _HOLDERS_TTL_S or not set(hosts) <= set(self._holder_of):
            futures = [h.future for h in self._pod_hosts]
            who = self.client.who_has(futures)
            self._holder_of = {h.file.host: (list(who.get(h.future.key, ())) or [""])[0]
                               for h in self._pod_hosts}
            self._holders_at = now
        return self._holder_of

    # ---- one host in the kernel ---------------------------------------------------------------
    def local(self) -> Any:
        """The one host of a single-host PodProfile, decoded in the kernel (memory guarded): the
        tools that read events in the kernel run on it."""
        if len(self.hosts) != 1:
            raise NotDistributed(f"{self.source}: this tool reads events in the kernel and does "
                                 f"not run over the {len(self.hosts)} hosts of a distributed "
                                 "profile; pick one host (the suite's host picker, or "
                                 "PodProfile.select(host)).")
        if self._local is None:  # named as on the workers: a rank is `rank N`, not its file
            self._local = open_host(self._pod_hosts[0].file)
        return self._local

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # private names and IPython's display hooks: never a decode
            raise AttributeError(name)
        return getattr(self.local(), name)

    def close(self) -> None:
        """Lets the workers drop the hosts: this profile's trace actors, and, on the profile
        `open_profile` gave (not one of its `select`s), every host's data."""
        self._servers.clear()
        if self._owner:
            for host in self._pod_hosts:
                host.future.release()

    def __repr__(self) -> str:
        kinds = self.sections["kind"].value_counts().to_dict()
        return (f"<PodProfile {self.source!r} run={self.run!r} hosts={len(self.hosts)} "
                f"sections={kinds} tracks={len(self.tracks)} events={self.n_events:,} "
                f"duration={self.duration_us / 1000:.3f} ms on {self.client.scheduler.address}>")


