"""Opening files here, in the kernel: from a path or URL to a decoded `Profile`, shared in the
kernel (`open_local`), and one host of a run (`open_host`, what a Dask worker holds). The public
`open_profile` (xprof_widgets/opening.py) picks this or a Dask cluster; this floor knows no Dask."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..errors import ProfileError
from .cache import PROFILES, CacheKey, cache_key
from .locate import FileSystem, HostFile, find_runs, host_name, runs_table
from .memory_guard import check_memory
from .model import Profile
from .ranks import settle_ranks
from .trace_data import HostTrace


@dataclass(frozen=True)
class Chosen:
    """The files an open reads: the run picked (newest unless named) and its hosts picked."""

    path: str  # as the user gave it
    fs: FileSystem
    run: str | None
    run_path: str
    files: list[HostFile]
    runs: pd.DataFrame  # every run found, for the suite's pickers


def choose(path: str | os.PathLike, run: str | None = None,
           host: str | Sequence[str] | None = None) -> Chosen:
    """The run and hosts `open_profile` reads; a run or host not there is a ProfileError that
    lists those there are."""
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
    return Chosen(path, fs, chosen.run, chosen.path, list(files), runs_table(runs))


def open_local(chosen: Chosen) -> Profile:
    """The chosen files decoded in the kernel, or the kernel's profile of the same files while
    anything holds it (profile/cache.py); a run too large for the kernel's memory is refused
    before decoding (profile/memory_guard.py)."""
    def decode() -> Profile:
        check_memory(chosen.fs, chosen.files, chosen.run_path)
        traces = [_decode(chosen.fs, f) for f in chosen.files]
        if all(f.format == "chrome" for f in chosen.files):  # PyTorch's ranks, by their headers
            traces = settle_ranks(traces, [host_name(f.path) for f in chosen.files])
        return Profile(traces, source=chosen.path, run=chosen.run, runs=chosen.runs)

    profile = PROFILES.shared(cache_key(chosen.fs, chosen.files), decode)
    # A shared profile is labelled by its latest opening: the suite's pickers read these.
    profile.source, profile.run, profile.runs = chosen.path, chosen.run, chosen.runs
    return profile


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


def _decode(fs: FileSystem, file: HostFile) -> HostTrace:
    path = fs.strip(file.path)
    if file.format == "xspace":  # read from a mapping: its pages are the OS's, not a copy
        from .xspace import decode_xspace
        return decode_xspace(fs.map(path), file.path, file.host)
    from .chrome import decode_chrome  # a plain .json is scanned where it lies, as above
    return decode_chrome(fs.map(path), file.path, file.host)
