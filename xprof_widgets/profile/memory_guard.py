"""Refuse, before decoding, a run the kernel cannot hold: a clear error instead of a dead kernel.

Decoding peaks at a multiple of the file bytes, measured here (tests/bench/bench_pod.py prints
them again): an XSpace decoded, its timeline indexed and its tools run take 1.4-3x the file above
a fresh interpreter (the file is mapped, so its pages are the OS's); a Chrome trace decoded
by the compiled scanner, its first window drawn and every tool run, 1.6-1.9x its JSON text
(1 GB Kineto traces, plain and gzipped: tests/bench/bench_kineto.py; a gzipped trace is
counted by its uncompressed size, read from the gzip trailer). The Python reader, which takes
damaged Chrome traces up to 64 MB, peaks near 10x: at most 640 MB.
The rows XProf derives from TPU ops and GPU kernels are judged when they are made (usually on
the timeline's first draw, profile/xspace_derived.py), from the events they are made from:
making them peaks at about 226 bytes an event (the 1e6-event synthetic TPU host); ones that do
not fit are left out with a warning, and the rest of the profile opens. The need is compared
with the memory the kernel can still take: MemAvailable (/proc/meminfo; psutil elsewhere), no
more than a cgroup limit leaves, with headroom for everything else the kernel holds.

What the kernel already holds is counted as it is: the available memory is what is left beside
it, and a profile it holds is not decoded again (profile/cache.py), so reopening one is never
judged; only a new decode is. Before refusing one, profiles nothing holds any more are collected.

`XPROF_WIDGETS_MEMORY_LIMIT` sets the memory counted as available (bytes, or `512MB`, `2GiB`,
...), `off` turns the guard off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..errors import ProfileError
from .locate import FileSystem, HostFile
from .release import release_memory

LIMIT_ENV = "XPROF_WIDGETS_MEMORY_LIMIT"
PEAK_PER_FILE_BYTE = {"xspace": 4.0, "chrome": 2.5}
"""Peak decoding memory per byte of file (per byte of JSON text for Chrome traces)."""
DERIVED_ROWS_PEAK_PER_EVENT = 210
"""Peak memory making the derived rows takes per event they are made from (193 fitted)..."""
DERIVED_ROWS_PEAK_PER_EVENT_IN_FLIGHT = 200
"""... and per event of the planes being made at once, a plane a thread (178 fitted): measured
214-369 bytes an event in all (the peak above the RSS before, bench_decode.py) on 1e6-event
files of 1, 4 and 8 TPU cores on 1 and 2 threads."""
_DEFLATE_MAX = 1032
_JSON_GZIP_RATIO = 8  # a trace's JSON text over its gzip size, measured (7.5 at 1e6 events)
HEADROOM = 0.85
"""Share of the available memory a decode may take."""
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 2**10, "m": 1e6, "mb": 1e6, "mib": 2**20,
          "g": 1e9, "gb": 1e9, "gib": 2**30, "t": 1e12, "tb": 1e12, "tib": 2**40}


def check_memory(fs: FileSystem, files: Sequence[HostFile], where: str) -> None:
    """Raises a ProfileError when decoding `files` would take more memory than is available."""
    need = estimate_bytes(fs, files) if available_bytes() is not None else 0
    available = shortfall(need)
    if available is None:
        return
    hosts = ", ".join(f.host for f in files[:4]) + (", ..." if len(files) > 4 else "")
    raise ProfileError(
        f"{where}: decoding {len(files)} host file(s) here needs about {size_text(need)} of memory, "
        f"and this kernel has {size_text(available)} available: it would be killed, and with it "
        f"everything the notebook holds. Open fewer hosts with host= (one or a few of: {hosts}), "
        "or decode the run on a Dask cluster with client= (the kernel then holds only tables; "
        f"see docs/pod.md). {LIMIT_ENV}=off turns this check off.")


def shortfall(need: int) -> int | None:
    """The memory available when `need` bytes do not fit in it (after collecting profiles no
    one holds), else None."""
    available = available_bytes()
    if available is None or need <= available * HEADROOM:
        return None
    release_memory()
    available = available_bytes() or available
    return None if need <= available * HEADROOM else available


def estimate_bytes(fs: FileSystem, files: Sequence[HostFile]) -> int:
    """Peak memory to decode the files, from their sizes."""
    return int(sum(_content_bytes(fs, f) * PEAK_PER_FILE_BYTE[f.format] for f in files))


def available_bytes() -> int | None:
    """Memory this process can still take (None when unknown, or the guard is off)."""
    setting = os.environ.get(LIMIT_ENV, "").strip()
    if setting:
        return None if setting.lower() == "off" else parse_size(setting)
    found = [v for v in (_system_available(), _cgroup_available()) if v is not None]
    return min(found) if found else None


def parse_size(text: str) -> int:
    """`2GB`, `512 MiB`, `1e9` -> bytes."""
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise ProfileError(f"{LIMIT_ENV}={text!r}: expected a size such as 4GB, 512MiB or "
                           "1000000000, or 'off'.")
    return int(float(match.group(1)) * _UNITS[unit])


def _content_bytes(fs: FileSystem, file: HostFile) -> int:
    path = fs.strip(file.path)
    try:
        size = int(fs.fs.size(path)) if fs.remote else os.path.getsize(path)
    except Exception:  # noqa: BLE001 - a size we cannot read is not counted
        return 0
    if file.format == "chrome" and size >= 18 and path.endswith(".gz"):
        return max(size, _gzip_size(fs, path, size))
    return size


def _gzip_size(fs: FileSystem, path: str, size: int) -> int:
    """The uncompressed size a gzip file states in its last 4 bytes (modulo 4 GiB); `size`
    for a file that is not gzip."""
    try:
        if fs.remote:
            magic = fs.fs.cat_file(path, start=0, end=2)
            tail = fs.fs.cat_file(path, start=size - 4, end=size)
        else:
            with open(path, "rb") as f:
                magic = f.read(2)
                f.seek(size - 4)
                tail = f.read(4)
    except Exception:  # noqa: BLE001
        return size
    if magic != b"\x1f\x8b" or len(tail) != 4:
        return size
    stated = int.from_bytes(tail, "little")
    # deflate shrinks at most ~1032x: a larger figure is a cut-off file's stray bytes
    return stated if stated <= size * _DEFLATE_MAX else size * _JSON_GZIP_RATIO


def _system_available() -> int | None:
    """MemAvailable from /proc/meminfo on Linux (no import: psutil takes 14 ms to import, paid
    on every first open), else psutil's figure where it is installed."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def _cgroup_available() -> int | None:
    """What a container's memory limit leaves (cgroup v2, then v1), None without a limit."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f:
                limit = f.read().strip()
            with open(usage_file) as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:
            return max(0, int(limit) - usage)
    return None


def size_text(n: float) -> str:
    """`1.5 GB`, `812.0 MB`, `64 kB`."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.0f} kB"
