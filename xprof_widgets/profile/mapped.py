"""A local profile file mapped read-only instead of read: its bytes are page cache the OS can
drop and fault back in, not a second copy of the file in the kernel's memory.

The decoder reads the whole mapping once; afterwards the per-event details (stats read back by
each event's record offset) touch only the pages they need, and `release` hands the resident
pages back after decoding so they no longer count as the kernel's.

A mapping has one danger a copy does not: if the file shrinks while it is mapped (rewritten in
place, truncated), reading a page past the new end kills the process with SIGBUS, and with it
the notebook. Profilers write a new run directory each time, so this is rare; still, every
read after decoding first checks that the file is the one that was mapped (`ensure_intact`) and
refuses with a clear error if not. Files on filesystems that cannot be mapped are read whole.
"""

from __future__ import annotations

import mmap
import os

from ..errors import ProfileError

MIN_MAPPED_BYTES = 1 << 20
"""Smaller files are read: a mapping saves nothing on them and costs a file descriptor's worth
of bookkeeping."""


class MappedFile(mmap.mmap):
    """A read-only mapping of a whole file that knows which file version it maps."""

    path: str
    version: tuple[int, int, int]


def map_file(path: str) -> bytes | MappedFile:
    """The file's bytes: a read-only mapping for a local file of at least MIN_MAPPED_BYTES,
    else (small files, filesystems without mmap) the bytes read."""
    try:
        with open(path, "rb") as f:
            stat = os.fstat(f.fileno())
            if stat.st_size < MIN_MAPPED_BYTES:
                return f.read()
            try:
                mapping = MappedFile(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # a FUSE or network mount that cannot map
                return f.read()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read ({exc}).") from exc
    mapping.path = path
    mapping.version = _version(stat)
    return mapping


def ensure_intact(data: bytes | MappedFile) -> None:
    """Raises a ProfileError if a mapped file changed on disk since it was mapped (reading it
    then could kill the kernel); bytes read into memory are always intact."""
    if not isinstance(data, MappedFile):
        return
    try:
        now = _version(os.stat(data.path))
    except OSError as exc:
        raise ProfileError(f"{data.path}: the profile file is gone since it was opened ({exc}); "
                           "its event details can no longer be read. Open it again with "
                           "xw.open_profile.") from exc
    if now != data.version:
        raise ProfileError(f"{data.path}: the profile file changed on disk since it was opened "
                           f"({data.version[0]:,} bytes then, {now[0]:,} now); its event details "
                           "can no longer be read from it. Open it again with xw.open_profile.")


def release(data: bytes | MappedFile, start: int = 0, end: int | None = None) -> None:
    """Drops a mapping's resident pages in [start, end) from this process (they stay in the
    page cache, so a later read faults them back cheaply from there): once a pass over the
    file is done with them, they stop counting as memory the kernel holds."""
    if not isinstance(data, MappedFile) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start -= start % mmap.PAGESIZE
    end = len(data) if end is None else min(end, len(data))
    if end > start:
        data.madvise(mmap.MADV_DONTNEED, start, end - start)


_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # Linux 5.14+; Python 3.13 names it


def prefault(data: bytes | MappedFile, start: int, end: int) -> None:
    """Maps a mapping's pages in [start, end) in one call, before a pass reads them: one
    system call instead of a page fault every 4 KiB (a no-op where the OS lacks it)."""
    if not isinstance(data, MappedFile) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start -= start % mmap.PAGESIZE
    end = min(end, len(data))
    if end > start:
        try:
            data.madvise(_POPULATE_READ, start, end - start)
        except OSError:
            pass


def _version(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_size, stat.st_mtime_ns, stat.st_ino
