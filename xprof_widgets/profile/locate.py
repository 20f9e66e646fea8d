"""Finding the profile files behind a path: a logdir, a run directory, one file, or a URL.

TensorBoard's layout is `LOGDIR/plugins/profile/<run>/<host>.xplane.pb`; runs are named by
their capture time, so the newest run sorts last. Chrome traces are recognised by content as well
as by name (PyTorch's `trace.json`, HTA's `rank-0.json.gz`): a `.json[.gz]` file is a trace when
its first few KiB look like one. Local paths use the OS directly; anything with a `scheme://`
goes through fsspec, imported only then, with every failure of the remote store explained (no
network, no credentials, no such bucket, no permission) and no wait longer than
`REMOTE_TIMEOUT_S` for a listing. Nothing here ever writes.
"""

from __future__ import annotations

import calendar
import os
import posixpath
import socket
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import ProfileError
from .mapped import MappedFile, map_file
from .ranks import distinct_ranks, head_rank, name_rank, rank_host

XPLANE_SUFFIX = ".xplane.pb"
CHROME_SUFFIXES = (".trace.json.gz", ".trace.json")  # traces by name: never sniffed
JSON_SUFFIXES = (".json.gz", ".json")  # traces when their content says so
SNIFF_BYTES = 4096
_SNIFF_TEXT = 16384  # how much of a gzipped file's start is inflated to sniff it
_TRACE_KEYS = (b'"traceEvents"', b'"ph"', b'"displayTimeUnit"', b'"deviceProperties"',
               b'"baseTimeNanoseconds"', b'"systemTraceEvents"')
_MAX_LOGDIR_DEPTH = 4
_EXPECTED_FILES = (f"an {XPLANE_SUFFIX} or a Chrome trace (.json or .json.gz holding "
                   '{"traceEvents": [...]} or a JSON array of trace events)')
REMOTE_TIMEOUT_S = 20.0
"""The longest wait for one remote listing or probe; reading a profile's bytes has no limit."""
DNS_TIMEOUT_S = 5.0
REMOTE_VERSION_FIELDS = ("mtime", "modified", "updated", "LastModified", "last_modified",
                         "created", "generation", "VersionId", "version_id", "ETag", "etag",
                         "md5Hash", "crc32c")
"""Fields of an fsspec `info` that change when a file is written again (local, memory, GCS, S3,
Azure, HTTP name them differently)."""


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


def name_format(name: str) -> str | None:
    """What a file name says: "xspace", "chrome", "json" (a trace if its content is) or None."""
    if name.endswith(XPLANE_SUFFIX):
        return "xspace"
    if name.endswith(CHROME_SUFFIXES):
        return "chrome"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    return None


def inflated(head: bytes) -> bytes | None:
    """A file's first bytes as text: inflated where gzipped; None where the gzip is broken."""
    if head[:2] != b"\x1f\x8b":
        return head
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _SNIFF_TEXT)
    except zlib.error:
        return None


def sniff(head: bytes) -> str | None:
    """What a file's first bytes look like: "trace", "json" (JSON, no sign of a trace) or None."""
    head = inflated(head)
    if head is None:
        return None
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text[:1] or text[:1] not in b"[{":
        return None
    if text[:1] == b"[" and text[1:].lstrip()[:1] not in (b"{", b""):
        return "json"  # an array, but not of objects
    return "trace" if any(key in text for key in _TRACE_KEYS) else "json"


def host_name(name: str) -> str:
    base = posixpath.basename(name)
    for suffix in (XPLANE_SUFFIX, ".pt.trace.json.gz", ".pt.trace.json") + CHROME_SUFFIXES + (
            JSON_SUFFIXES):
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    stem, _ = posixpath.splitext(base.removesuffix(".gz"))
    return stem or base


class FileSystem:
    """The few operations we need, over the local disk or an fsspec filesystem."""

    def __init__(self, path: str):
        self.remote = "://" in path and not path.startswith("file://")
        self.local_prefix = "file://" if path.startswith("file://") else ""
        self.anonymous = False
        if self.remote:
            self.protocol = path.split("://", 1)[0]
            self.fs = self._connect(path)

    def _connect(self, url: str) -> Any:
        try:
            import fsspec
        except ImportError as exc:
            raise ProfileError(f"{url}: opening URLs needs fsspec (pip install fsspec, plus "
                               "gcsfs for gs://).") from exc
        _check_implementation(url, self.protocol)
        host = _service_host(url, self.protocol)
        if host:
            _check_resolves(url, host)
        options = {}
        if self.protocol in ("gs", "gcs"):
            options = _gcs_options(url)
            self.anonymous = options.get("token") == "anon"
        try:
            fs, _ = fsspec.core.url_to_fs(url, **options)
        except Exception as exc:  # the filesystem's own errors, whatever their class
            raise remote_error(url, exc, self.anonymous) from exc
        return fs

    def strip(self, path: str) -> str:
        return path[len(self.local_prefix):] if self.local_prefix else path

    def url(self, path: str) -> str:
        if self.remote and "://" not in path:
            return f"{self.protocol}://{path}"
        return path

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts) if self.remote else os.path.join(*parts)

    def kind(self, path: str) -> str | None:
        """"dir", "file" or None where nothing is."""
        if not self.remote:
            return "dir" if os.path.isdir(path) else "file" if os.path.exists(path) else None
        try:
            info = self._call(path, self.fs.info, path)
        except _NotThere:
            return None
        return "dir" if info.get("type") == "directory" else "file"

    def entries(self, path: str) -> list[tuple[str, bool]]:
        """(name, is a directory) of each entry of a directory, by name."""
        if self.remote:
            try:
                listing = self._call(path, self.fs.ls, path, detail=True)
            except _NotThere as exc:
                raise remote_error(self.url(path), exc.__cause__, self.anonymous) from exc
            found = {posixpath.basename(e["name"].rstrip("/")): e.get("type") == "directory"
                     for e in listing}
            return sorted((name, is_dir) for name, is_dir in found.items() if name)
        try:
            with os.scandir(path) as it:
                return sorted((e.name, e.is_dir()) for e in it)
        except OSError as exc:
            raise ProfileError(f"{path}: the directory cannot be listed ({exc}); check its "
                               "permissions.") from exc

    def head(self, path: str, size: int = SNIFF_BYTES) -> bytes:
        """The first bytes of a file, to tell what it is without reading it all."""
        if self.remote:
            try:
                return self._call(path, self.fs.cat_file, path, start=0, end=size)
            except _NotThere as exc:
                raise remote_error(self.url(path), exc.__cause__, self.anonymous) from exc
        try:
            with open(path, "rb") as f:
                return f.read(size)
        except OSError as exc:
            raise ProfileError(f"{path}: cannot be read ({exc}).") from exc

    def version(self, path: str) -> tuple | None:
        """What tells this file's contents from a later write's, without reading it: (resolved
        path, size, mtime in ns, inode) on a local disk; on a remote store the URL, the size and
        whichever of REMOTE_VERSION_FIELDS its `info` gives. None where nothing identifies a
        version (a remote rewrite of the same size could not be told apart)."""
        if not self.remote:
            try:
                stat = os.stat(path)
            except OSError:
                return None
            return os.path.realpath(path), stat.st_size, stat.st_mtime_ns, stat.st_ino
        try:
            info = self._call(path, self.fs.info, path)
        except _NotThere:
            return None
        stamps = tuple((k, str(info[k])) for k in REMOTE_VERSION_FIELDS if info.get(k) is not None)
        return (self.url(path), info.get("size"), stamps) if stamps else None

    def read(self, path: str) -> bytes:
        if self.remote:
            try:
                return self._call(path, self.fs.cat_file, path, timed=False)
            except _NotThere as exc:
                raise remote_error(self.url(path), exc.__cause__, self.anonymous) from exc
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise ProfileError(f"{path}: cannot be read ({exc}).") from exc

    def write(self, path: str, data: bytes) -> None:
        """Writes a whole file (a trace with events added): local, or to the remote store."""
        if self.remote:
            self._call(path, self.fs.pipe_file, path, data, timed=False)
            return
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise ProfileError(f"{path}: cannot be written ({exc}).") from exc

    def map(self, path: str) -> bytes | MappedFile:
        """The file's bytes for a decoder that only reads them: a local file is mapped
        (profile/mapped.py), a remote one read."""
        return self.read(path) if self.remote else map_file(path)

    def _call(self, path: str, method: Any, *args: Any, timed: bool = True, **kwargs: Any) -> Any:
        """One remote operation; a bounded wait on async filesystems (fsspec's `timeout`)."""
        if timed and getattr(self.fs, "async_impl", False):
            kwargs["timeout"] = REMOTE_TIMEOUT_S
        try:
            return method(*args, **kwargs)
        except FileNotFoundError as exc:
            raise _NotThere() from exc
        except Exception as exc:  # aiohttp, google-auth, botocore...: classified by name
            raise remote_error(self.url(path), exc, self.anonymous) from exc


class _NotThere(Exception):
    """A remote path that does not exist (callers decide whether that is an error)."""


# ---- finding runs -------------------------------------------------------------------------------
def find_runs(path: str) -> tuple[FileSystem, list[RunFiles]]:
    """All runs reachable from `path`, oldest first; a file or run dir gives one run."""
    fs = FileSystem(path)
    path = fs.strip(path)
    kind = fs.kind(path)
    if kind is None:
        where = ("no such bucket or path. Check the bucket name and the path" + _list_hint(
            fs.protocol, path) if fs.remote else "no such file or directory")
        raise ProfileError(f"{path}: {where}. Expected a logdir (with plugins/profile/<run>/), "
                           f"a run directory, {_EXPECTED_FILES}.")
    if kind == "file":
        return fs, [_single_file(fs, path)]
    entries = fs.entries(path)
    skipped: list[str] = []
    own = _run_hosts(fs, path, entries, skipped)
    if own:
        return fs, [RunFiles(posixpath.basename(path.rstrip("/\\")), fs.url(path), own)]
    plugin_runs: list[str] = []
    plain: list[tuple[str, list]] = []
    _walk(fs, path, entries, 0, plugin_runs, plain)
    if plugin_runs:
        runs = [RunFiles(posixpath.basename(d.rstrip("/\\")), fs.url(d),
                         _run_hosts(fs, d, fs.entries(d), skipped)) for d in plugin_runs]
    else:
        runs = [RunFiles(_relative(fs, path, d), fs.url(d), _run_hosts(fs, d, e, skipped))
                for d, e in plain]
    with_files = [r for r in runs if r.hosts]
    not_traces = (f" ({', '.join(skipped[:3])}{' and others' if len(skipped) > 3 else ''}: "
                  "JSON but not a Chrome trace)") if skipped else ""
    if not plugin_runs and not with_files:
        raise ProfileError(f"{path}: no profile found: the directory has no plugins/profile/<run>/ "
                           f"and no .xplane.pb or Chrome trace files{not_traces}. Capture one "
                           "with `with jax.profiler.trace(logdir): ...` and pass that logdir.")
    if not with_files:
        raise ProfileError(f"{path}: found runs ({', '.join(r.run or '' for r in runs)}) but "
                           f"none holds a {XPLANE_SUFFIX} or Chrome trace file{not_traces}; the "
                           "capture may still be running or may have failed.")
    with_files.sort(key=lambda r: r.run or "")
    return fs, side_by_side(fs, with_files)


SIDE_BY_SIDE_S = 60
"""Run directories of different hosts captured this close together are one job's run."""


def side_by_side(fs: FileSystem, runs: list[RunFiles]) -> list[RunFiles]:
    """Runs that one multi-host job wrote host by host, joined into one run: each host of a job
    that calls jax.profiler.trace names its run directory by its own capture time (seconds
    apart), or writes its own logdir (`LOGDIR/<host>/plugins/profile/<run>/`). Runs join when
    their names are capture times at most SIDE_BY_SIDE_S after the first one's and their hosts
    are all different; the joined run keeps the first name."""
    out: list[RunFiles] = []
    first_time: float | None = None
    for run in runs:
        when = _capture_time(run.run)
        last = out[-1] if out else None
        if (last is not None and when is not None and first_time is not None
                and when - first_time <= SIDE_BY_SIDE_S
                and not {h.host for h in last.hosts} & {h.host for h in run.hosts}):
            hosts = sorted([*last.hosts, *run.hosts], key=lambda h: h.host)
            common = posixpath.commonpath([last.path, run.path]) if fs.remote else \
                os.path.commonpath([last.path, run.path])
            out[-1] = RunFiles(last.run, fs.url(common), hosts)
            continue
        out.append(run)
        first_time = when
    return out


def _capture_time(name: str | None) -> float | None:
    """Seconds since the epoch of a run named by its capture time (`2026_01_31_12_00_05`)."""
    stamp = posixpath.basename(name or "")
    try:
        return calendar.timegm(time.strptime(stamp, "%Y_%m_%d_%H_%M_%S"))
    except ValueError:
        return None


def _single_file(fs: FileSystem, path: str) -> RunFiles:
    fmt = name_format(path)
    if fmt != "xspace":
        looks = sniff(fs.head(path))
        fmt = "chrome" if looks is not None or fmt is not None else None
    if fmt is None:
        raise ProfileError(f"{path}: not a profile file. Expected {_EXPECTED_FILES}.")
    parent = posixpath.dirname(path) if fs.remote else os.path.dirname(path)
    run = posixpath.basename(parent) if posixpath.basename(
        posixpath.dirname(parent)) == "profile" else None
    return RunFiles(run, fs.url(path), [HostFile(host_name(path), fs.url(path), fmt)])


def _run_hosts(fs: FileSystem, directory: str, entries: list[tuple[str, bool]],
               skipped: list[str]) -> list[HostFile]:
    """Profile files directly in a directory; a host with both formats keeps its XSpace.

    Files named as profiles are taken by name; other `.json[.gz]` files only when their first
    bytes look like a trace (and only for a host no named file claims), the rest are listed in
    `skipped`.
    """
    hosts: dict[str, HostFile] = {}
    maybe: list[str] = []
    for name, is_dir in entries:
        fmt = name_format(name)
        if is_dir or fmt is None:
            continue
        if fmt == "json":
            maybe.append(name)
            continue
        host = host_name(name)
        if host not in hosts or fmt == "xspace":
            hosts[host] = HostFile(host, fs.url(fs.join(directory, name)), fmt)
    for name in maybe:
        host = host_name(name)
        if host in hosts:
            continue
        path = fs.join(directory, name)
        try:
            looks = sniff(fs.head(path))
        except ProfileError:
            looks = None
        if looks == "trace":
            hosts[host] = HostFile(host, fs.url(path), "chrome")
        else:
            skipped.append(name)
    return _by_rank(fs, [hosts[h] for h in sorted(hosts)])


def _by_rank(fs: FileSystem, files: list[HostFile]) -> list[HostFile]:
    """A run of PyTorch traces, one per rank, as hosts `rank N` in rank order (profile/ranks.py),
    from what each file's first bytes or name say; decoding has the last word."""
    if len(files) < 2 or any(f.format != "chrome" for f in files):
        return files
    ranks = []
    for f in files:
        try:
            text = inflated(fs.head(fs.strip(f.path)))
        except ProfileError:
            text = None
        rank = head_rank(text) if text else None
        ranks.append(rank if rank is not None else name_rank(f.path))
    if not distinct_ranks(ranks):
        return files
    ranked = sorted(zip(ranks, files, strict=True), key=lambda pair: pair[0])
    return [HostFile(rank_host(r), f.path, f.format) for r, f in ranked]


def _walk(fs: FileSystem, directory: str, entries: list[tuple[str, bool]], depth: int,
          plugin_runs: list[str], plain: list[tuple[str, list]]) -> None:
    """Run directories under `plugins/profile`, searched a few levels deep; where there is none,
    the directories that hold profile files themselves (`plain`) stand for runs."""
    if ("plugins", True) in entries:
        profile_dir = fs.join(directory, "plugins", "profile")
        if fs.kind(profile_dir) == "dir":
            plugin_runs.extend(fs.join(profile_dir, name)
                               for name, is_dir in fs.entries(profile_dir) if is_dir)
            return
    if depth and any(not is_dir and name_format(name) for name, is_dir in entries):
        plain.append((directory, entries))
    if depth >= _MAX_LOGDIR_DEPTH:
        return
    for name, is_dir in entries:
        if is_dir and not name.startswith("."):
            child = fs.join(directory, name)
            _walk(fs, child, fs.entries(child), depth + 1, plugin_runs, plain)


def _relative(fs: FileSystem, root: str, directory: str) -> str:
    if fs.remote:
        return posixpath.relpath(directory.rstrip("/"), root.rstrip("/"))
    return os.path.relpath(directory, root).replace(os.sep, "/")


def runs_table(runs: list[RunFiles]) -> pd.DataFrame:
    return pd.DataFrame({"run": [r.run for r in runs],
                         "hosts": [[h.host for h in r.hosts] for r in runs],
                         "path": [r.path for r in runs]})


# ---- remote stores: what went wrong, in words ---------------------------------------------------
_PACKAGES = {"gs": "gcsfs", "gcs": "gcsfs", "s3": "s3fs", "s3a": "s3fs", "az": "adlfs",
             "abfs": "adlfs", "abfss": "adlfs", "adl": "adlfs", "hf": "huggingface_hub",
             "http": "aiohttp", "https": "aiohttp", "sftp": "paramiko", "ssh": "paramiko"}
_NETWORK_NAMES = ("ClientConnector", "DNS", "ConnectionError", "ConnectTimeout",
                  "ServerDisconnected", "gaierror", "TransportError", "EndpointConnectionError",
                  "NameResolution", "NewConnectionError", "ServerTimeout")
_NETWORK_TEXT = ("name or service not known", "temporary failure in name resolution",
                 "nodename nor servname", "network is unreachable", "no route to host")
_CREDENTIAL_NAMES = ("Credentials", "RefreshError", "Unauthenticated", "Unauthorized",
                     "InvalidAccessKeyId", "ExpiredToken", "SignatureDoesNotMatch",
                     "InvalidGrant")
_CREDENTIAL_TEXT = ("anonymous caller", "invalid credentials", "login required",
                    "invalid_grant", "unauthenticated", "credentials")
_PERMISSION_NAMES = ("Forbidden", "AccessDenied", "PermissionDenied")
_PERMISSION_TEXT = ("forbidden", "accessdenied", "access denied", "does not have storage.",
                    "permission")
_MISSING_NAMES = ("NoSuchBucket", "NoSuchKey", "NotFound")
_DNS_OK: set[str] = set()


def remote_error(url: str, exc: BaseException | None, anonymous: bool = False) -> ProfileError:
    """A ProfileError that says why a remote store failed and what to do about it.

    Exceptions are classified by their class names, status codes and messages along their
    cause chain, since aiohttp, google-auth or botocore may not be importable here.
    """
    chain = _chain(exc)
    protocol = url.split("://", 1)[0] if "://" in url else ""
    found = _classify(chain)
    if found is None:
        cause = _describe(chain[0]) if chain else "unknown error"
        return ProfileError(f"{url}: cannot be read ({cause}). Check the URL and your access to "
                            "it, or copy the files to a local disk and open them there.")
    category, culprit = found
    cause = _describe(culprit)
    if category == "timeout":
        waited = (f"no answer from the storage service within {REMOTE_TIMEOUT_S:g} s"
                  if type(culprit).__name__ == "FSTimeoutError" else "a request timed out")
        return ProfileError(
            f"{url}: {waited} ({cause}). The network is down, slow or blocked by a firewall or "
            "proxy; check the "
            f"connection, or copy the logdir to a local disk and open that{_copy_hint(protocol)}.")
    if category == "network":
        return ProfileError(
            f"{url}: cannot reach the storage service ({cause}). This machine has no network "
            "connection, or a proxy or firewall blocks it; check the connection (and HTTPS_PROXY "
            f"if you use a proxy), or copy the logdir to a local disk and open that"
            f"{_copy_hint(protocol)}.")
    if category == "credentials" or (category == "permission" and anonymous):
        said = "no credentials were found, so the bucket was read anonymously, and " if (
            anonymous) else ""
        return ProfileError(f"{url}: {said}the storage service refused the request for lack of "
                            f"valid credentials ({cause}). {_credentials_hint(protocol)}")
    if category == "permission":
        return ProfileError(f"{url}: permission denied ({cause}). "
                            f"{_permission_hint(protocol, url)}")
    return ProfileError(f"{url}: no such bucket or path ({cause}). Check the bucket name and the "
                        f"path{_list_hint(protocol, url)}.")


def _chain(exc: BaseException | None) -> list[BaseException]:
    """The exception, its causes and contexts, and exceptions it carries as attributes."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 16:
        e = todo.pop(0)
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        todo.extend([e.__cause__, e.__context__, getattr(e, "os_error", None)])
        todo.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))
    return seen


def _classify(chain: list[BaseException]) -> tuple[str, BaseException] | None:
    tests = (("timeout", lambda e, names, text, code: isinstance(e, TimeoutError)
              or "Timeout" in names and "Connect" not in names),
             ("network", lambda e, names, text, code: isinstance(e, (socket.gaierror,
                                                                      ConnectionError))
              or _has(names, _NETWORK_NAMES) or _has(text, _NETWORK_TEXT)),
             ("credentials", lambda e, names, text, code: code == 401
              or _has(names, _CREDENTIAL_NAMES) or _has(text, _CREDENTIAL_TEXT)),
             ("permission", lambda e, names, text, code: code == 403
              or isinstance(e, PermissionError) or _has(names, _PERMISSION_NAMES)
              or _has(text, _PERMISSION_TEXT)),
             ("missing", lambda e, names, text, code: code == 404
              or isinstance(e, FileNotFoundError) or _has(names, _MISSING_NAMES)))
    facts = [(e, " ".join(c.__name__ for c in type(e).__mro__), str(e).lower(), _status(e))
             for e in chain]
    for category, test in tests:
        for e, names, text, code in facts:
            if test(e, names, text, code):
                return category, e
    return None


def _has(text: str, needles: tuple[str, ...]) -> bool:
    return any(n in text for n in needles)


def _status(exc: BaseException) -> int | None:
    """An HTTP status carried by the exception (gcsfs HttpError.code, aiohttp .status, botocore
    response metadata)."""
    for attr in ("code", "status", "status_code", "http_status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        meta = response.get("ResponseMetadata") or {}
        if isinstance(meta.get("HTTPStatusCode"), int):
            return meta["HTTPStatusCode"]
    return None


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _credentials_hint(protocol: str) -> str:
    if protocol in ("gs", "gcs"):
        return ("Sign in: in Colab run `from google.colab import auth; auth.authenticate_user()`; "
                "elsewhere run `gcloud auth application-default login`, or set "
                "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file. Then open the "
                "profile again.")
    if protocol in ("s3", "s3a"):
        return ("Configure AWS credentials (`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID "
                "and AWS_SECRET_ACCESS_KEY), then open the profile again.")
    if protocol in ("az", "abfs", "abfss", "adl"):
        return ("Sign in with `az login`, or set AZURE_STORAGE_ACCOUNT_NAME and "
                "AZURE_STORAGE_ACCOUNT_KEY, then open the profile again.")
    return f"Configure credentials for {protocol}:// as its fsspec filesystem documents."


def _permission_hint(protocol: str, url: str) -> str:
    if protocol in ("gs", "gcs"):
        bucket = url.split("://", 1)[1].split("/", 1)[0]
        return ("The account in use cannot read this path: it needs storage.objects.list and "
                f"storage.objects.get on gs://{bucket} (e.g. the Storage Object Viewer role). Ask "
                "the bucket's owner for access, or sign in as another account with "
                "`gcloud auth application-default login`.")
    return ("The credentials in use cannot read this path; ask its owner for read access or use "
            "other credentials.")


def _list_hint(protocol: str, url: str) -> str:
    if "://" not in url:
        url = f"{protocol}://{url}"
    parent = url.rstrip("/").rsplit("/", 1)[0] + "/"
    if protocol in ("gs", "gcs"):
        return f" (e.g. `gcloud storage ls {parent}`)"
    if protocol in ("s3", "s3a"):
        return f" (e.g. `aws s3 ls {parent}`)"
    return ""


def _copy_hint(protocol: str) -> str:
    if protocol in ("gs", "gcs"):
        return " (`gcloud storage cp -r URL .` where the network works)"
    if protocol in ("s3", "s3a"):
        return " (`aws s3 cp --recursive URL .` where the network works)"
    return ""


def _check_implementation(url: str, protocol: str) -> None:
    """Fails fast, naming the package, when fsspec has no filesystem for the protocol here."""
    import fsspec
    from fsspec.registry import known_implementations

    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        known = known_implementations.get(protocol, {})
        package = _PACKAGES.get(protocol) or known.get("class", "").split(".")[0]
        install = f"pip install {package}" if package and package != "fsspec" else (
            "install the packages it names")
        raise ProfileError(f"{url}: reading {protocol}:// URLs needs a package that is not "
                           f"installed ({known.get('err') or exc}); run `{install}` and restart "
                           "the kernel.") from exc
    except ValueError as exc:
        raise ProfileError(f"{url}: fsspec has no filesystem for {protocol}:// URLs ({exc}). "
                           "Check the URL's scheme (gs://, s3://, ...), or install the package "
                           "that provides it.") from exc


def _service_host(url: str, protocol: str) -> str | None:
    """The host a URL's filesystem talks to, where it is known and no proxy stands between."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    if protocol in ("gs", "gcs"):
        return None if os.environ.get("STORAGE_EMULATOR_HOST") else "storage.googleapis.com"
    if protocol in ("http", "https"):
        netloc = url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        host = netloc.rsplit(":", 1)[0] if not netloc.startswith("[") else None
        return host or None
    return None


def _check_resolves(url: str, host: str) -> None:
    """A DNS lookup of the service's host, bounded in time: without one, the filesystem would
    retry a dead connection for most of a minute before saying what is wrong."""
    if host in _DNS_OK:
        return
    outcome: list[BaseException | None] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, 443)
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(DNS_TIMEOUT_S)
    if outcome and outcome[0] is None:
        _DNS_OK.add(host)
        return
    cause = (f"the DNS lookup of {host} failed: {outcome[0]}" if outcome else
             f"the DNS lookup of {host} did not answer within {DNS_TIMEOUT_S:g} s")
    raise ProfileError(f"{url}: cannot reach {host} ({cause}). This machine has no network "
                       "connection, or its DNS or a firewall blocks it; check the connection (set "
                       "HTTPS_PROXY if you need a proxy), or copy the logdir to a local disk and "
                       f"open that{_copy_hint(url.split('://', 1)[0])}.")


def _gcs_options(url: str) -> dict[str, Any]:
    """gcsfs's options: anonymous access when no Google credentials exist at all, so gcsfs does
    not spend 15 s probing for a metadata server before falling back to it anyway."""
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        return {}
    try:
        google.auth.default()
    except DefaultCredentialsError as exc:
        if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
            raise remote_error(url, exc) from exc  # a key file is named but unusable
        if os.path.exists(os.path.join(os.path.expanduser("~"), ".gcs_tokens")):
            return {}  # gcsfs's own token cache
        return {"token": "anon"}
    except Exception:  # noqa: BLE001 - anything else: let gcsfs try its own ways
        return {}
    return {}
