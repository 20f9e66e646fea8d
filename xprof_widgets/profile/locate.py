"""Finding the profile files behind a path: a logdir, a run directory, one file, or a URL.

TensorBoard's layout is `LOGDIR/plugins/profile/<run>/<host>.xplane.pb`; runs are named by
their capture time, so the newest run sorts last. Local paths use the OS directly; anything
with a `scheme://` goes through fsspec, imported only then. Nothing here ever writes.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

import pandas as pd

from ..errors import ProfileError

XPLANE_SUFFIX = ".xplane.pb"
CHROME_SUFFIXES = (".trace.json.gz", ".trace.json")
_MAX_LOGDIR_DEPTH = 4


@dataclass(frozen=True)
class HostFile:
    host: str
    path: str
    format: str  # "xspace" or "chrome"


@dataclass(frozen=True)
class RunFiles:
    run: str | None
    path: str
    hosts: list[HostFile]


def profile_format(name: str) -> str | None:
    if name.endswith(XPLANE_SUFFIX):
        return "xspace"
    if name.endswith(CHROME_SUFFIXES):
        return "chrome"
    return None


def host_name(name: str) -> str:
    base = posixpath.basename(name)
    for suffix in (XPLANE_SUFFIX, ".pt.trace.json.gz", ".pt.trace.json") + CHROME_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


class FileSystem:
    """The few operations we need, over the local disk or an fsspec filesystem."""

    def __init__(self, path: str):
        self.remote = "://" in path and not path.startswith("file://")
        if self.remote:
            try:
                import fsspec
            except ImportError as exc:
                raise ProfileError(f"{path}: opening URLs needs fsspec (pip install fsspec, plus "
                                   "gcsfs for gs://).") from exc
            self.fs, _ = fsspec.core.url_to_fs(path)
            self.protocol = path.split("://", 1)[0]
        self.local_prefix = "file://" if path.startswith("file://") else ""

    def strip(self, path: str) -> str:
        return path[len(self.local_prefix):] if self.local_prefix else path

    def url(self, path: str) -> str:
        if self.remote and "://" not in path:
            return f"{self.protocol}://{path}"
        return path

    def exists(self, path: str) -> bool:
        return self.fs.exists(path) if self.remote else os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return self.fs.isdir(path) if self.remote else os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        if self.remote:
            return sorted(posixpath.basename(p.rstrip("/"))
                          for p in self.fs.ls(path, detail=False))
        return sorted(os.listdir(path))

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts) if self.remote else os.path.join(*parts)

    def read(self, path: str) -> bytes:
        try:
            if self.remote:
                with self.fs.open(path, "rb") as f:
                    return f.read()
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise ProfileError(f"{self.url(path)}: cannot be read ({exc}).") from exc


def find_runs(path: str) -> tuple[FileSystem, list[RunFiles]]:
    """All runs reachable from `path`, oldest first; a file or run dir gives one run."""
    fs = FileSystem(path)
    path = fs.strip(path)
    if not fs.exists(path):
        raise ProfileError(f"{path}: no such file or directory. Expected a logdir (with "
                           "plugins/profile/<run>/), a run directory, an .xplane.pb or a "
                           ".trace.json[.gz] file.")
    if not fs.isdir(path):
        fmt = profile_format(path)
        if fmt is None:
            raise ProfileError(f"{path}: not a profile file. Expected a name ending in "
                               f"{XPLANE_SUFFIX}, .trace.json or .trace.json.gz.")
        parent = posixpath.dirname(path) if fs.remote else os.path.dirname(path)
        run = posixpath.basename(parent) if posixpath.basename(
            posixpath.dirname(parent)) == "profile" else None
        return fs, [RunFiles(run, fs.url(path), [HostFile(host_name(path), fs.url(path), fmt)])]
    own = _run_hosts(fs, path)
    if own:
        return fs, [RunFiles(posixpath.basename(path.rstrip("/\\")), fs.url(path), own)]
    run_dirs = _run_dirs(fs, path, 0)
    runs = [RunFiles(posixpath.basename(d.rstrip("/\\")), fs.url(d), _run_hosts(fs, d))
            for d in run_dirs]
    with_files = [r for r in runs if r.hosts]
    if not run_dirs:
        raise ProfileError(f"{path}: no profile found: the directory has no plugins/profile/<run>/ "
                           "and no .xplane.pb or .trace.json[.gz] files. Capture one with "
                           "`with jax.profiler.trace(logdir): ...` and pass that logdir.")
    if not with_files:
        raise ProfileError(f"{path}: found runs ({', '.join(r.run or '' for r in runs)}) but "
                           f"none holds a {XPLANE_SUFFIX} or .trace.json[.gz] file; the capture "
                           "may still be running or may have failed.")
    with_files.sort(key=lambda r: r.run or "")
    return fs, with_files


def _run_hosts(fs: FileSystem, directory: str) -> list[HostFile]:
    """Profile files directly in a directory; a host with both formats keeps its XSpace."""
    hosts: dict[str, HostFile] = {}
    for name in fs.listdir(directory):
        fmt = profile_format(name)
        if fmt is None:
            continue
        host = host_name(name)
        if host not in hosts or fmt == "xspace":
            hosts[host] = HostFile(host, fs.url(fs.join(directory, name)), fmt)
    return [hosts[h] for h in sorted(hosts)]


def _run_dirs(fs: FileSystem, directory: str, depth: int) -> list[str]:
    """Run directories under `plugins/profile`, searched a few levels deep."""
    profile_dir = fs.join(directory, "plugins", "profile")
    if fs.isdir(profile_dir):
        return [fs.join(profile_dir, r) for r in fs.listdir(profile_dir)
                if fs.isdir(fs.join(profile_dir, r))]
    if depth >= _MAX_LOGDIR_DEPTH:
        return []
    found = []
    for name in fs.listdir(directory):
        child = fs.join(directory, name)
        if not name.startswith(".") and fs.isdir(child):
            found.extend(_run_dirs(fs, child, depth + 1))
    return found


def runs_table(runs: list[RunFiles]) -> pd.DataFrame:
    return pd.DataFrame({"run": [r.run for r in runs],
                         "hosts": [[h.host for h in r.hosts] for r in runs],
                         "path": [r.path for r in runs]})
