"""`open_profile`: from a path or URL to a decoded `Profile`, shared in the kernel; `close`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ProfileError
from .cache import PROFILES, CacheKey, cache_key
from .locate import FileSystem, HostFile, find_runs, host_name, runs_table
from .memory_guard import check_memory
from .model import Profile
from .ranks import settle_ranks
from .trace_data import HostTrace

if TYPE_CHECKING:
    from ..pod.profile import PodProfile


def open_profile(path: str | os.PathLike | Profile, run: str | None = None,
                 host: str | Sequence[str] | None = None,
                 client: Any = None) -> Profile | PodProfile:
    """Opens a logdir, run directory, `.xplane.pb`, Chrome trace or fsspec URL.

    A Chrome trace is any JSON file holding `{"traceEvents": [...]}` or an array of events,
    gzipped or not, whatever its name (`trace.json`, `rank-0.json.gz`, `*.pt.trace.json`).

    The newest run is opened unless `run` names one; every host of the run is opened unless
    `host` picks one or several. An opened `Profile` is returned as it is, and so is the
    kernel's profile of the same files while anything holds it: every widget and call on them
    shares one decode (profile/cache.py) until a file changes or `xw.close` releases it.

    With `client`, a `dask.distributed.Client`, every host is decoded on a Dask worker and stays
    there: the result is a `PodProfile` (xprof_widgets.pod, docs/pod.md) and the kernel holds
    only tables. Without it, a run too large for the kernel's memory is refused before decoding
    (profile/memory_guard.py); reopening a profile the kernel holds costs nothing.
    """
    if isinstance(path, Profile) or _is_pod(path):
        return path
    path = os.fspath(path)
    fs, runs = find_runs(path)
    chosen = runs[-1]
    if run is not None:
        matching = [r for r in runs if r.run == run]
        if not matching:
            raise ProfileError(f"{path}: no run {run!r}; runs: "
                               f"{', '.join(str(r.run) for r in runs)}.")
        chosen = matching[0]
    files = chosen.hosts
    if host is not None:
        wanted = [host] if isinstance(host, str) else list(host)
        files = [f for f in chosen.hosts if f.host in wanted]
        if len(files) != len(wanted):
            missing = sorted(set(wanted) - {f.host for f in files})
            raise ProfileError(f"{chosen.path}: no host {missing}; hosts: "
                               f"{', '.join(f.host for f in chosen.hosts)}.")
    if client is not None:
        from ..pod.profile import open_pod
        return open_pod(client, files, source=path, run=chosen.run, runs=runs_table(runs))
    runs_found = runs_table(runs)

    def decode() -> Profile:
        check_memory(fs, files, chosen.path)
        traces = [_decode(fs, f) for f in files]
        if all(f.format == "chrome" for f in files):  # PyTorch's ranks, by their headers
            traces = settle_ranks(traces, [host_name(f.path) for f in files])
        return Profile(traces, source=path, run=chosen.run, runs=runs_found)

    profile = PROFILES.shared(cache_key(fs, files), decode)
    # A shared profile is labelled by its latest opening: the suite's pickers read these.
    profile.source, profile.run, profile.runs = path, chosen.run, runs_found
    return profile


def close(profile: Profile | PodProfile) -> None:
    """Releases an opened profile for good (`Profile.close`): the kernel drops its data now,
    not when the last widget showing it goes, and the next open decodes the files again."""
    profile.close()


def open_host(file: HostFile) -> Profile:
    """One host's file as a single-host Profile named `file.host`: what a Dask worker holds of
    each host of a PodProfile, and a host picked from one, named as in the run. Memory guarded
    and shared as `open_profile` shares: a host named otherwise than its file (a PyTorch rank,
    `rank N`) is a profile of its own, so no open of the file alone lends it its file's name."""
    fs = FileSystem(file.path)
    key = cache_key(fs, [file])
    if key is not None and file.host != host_name(file.path):
        key = CacheKey((key.identity, file.host), key.versions)

    def decode() -> Profile:
        check_memory(fs, [file], file.path)
        return Profile([_decode(fs, file)], source=file.path)

    return PROFILES.shared(key, decode)


def _is_pod(value: Any) -> bool:
    pod = sys.modules.get("xprof_widgets.pod.profile")  # loaded by whoever made a PodProfile
    return pod is not None and isinstance(value, pod.PodProfile)


def _decode(fs: FileSystem, file: HostFile) -> HostTrace:
    path = fs.strip(file.path)
    if file.format == "xspace":  # read from a mapping: its pages are the OS's, not a copy
        from .xspace import decode_xspace
        return decode_xspace(fs.map(path), file.path, file.host)
    from .chrome import decode_chrome  # a plain .json is scanned where it lies, as above
    return decode_chrome(fs.map(path), file.path, file.host)
