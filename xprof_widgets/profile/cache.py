"""One decoded `Profile` per set of files in a kernel, shared by `open_profile` and every widget.

Re-running `tv = xw.TraceViewer(path); tv` makes a new widget while the old one lives on
(ipywidgets' registry and the `Out` history hold every displayed widget): unless both read one
decode, each re-run adds the whole profile to the kernel. Whatever a profile keeps for itself (its
trace index, the analyses, all in `Profile.memo`) is shared with it.

The key is the host files picked, each by what tells its version (`FileSystem.version`: resolved
path, size, mtime and inode on a local disk; on an fsspec store the size and what its `info`
gives of mtime, ETag, generation...), plus the decode settings read from the environment. A
changed file is another key: it is decoded again and the old entry dropped. Files of which one
has nothing that tells its version (a remote store whose `info` gives only a size) are not
cached.

Profiles are held weakly: one that no widget or variable holds is freed as usual.
`Profile.close()` (`xw.close`) drops one for good.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .locate import FileSystem, HostFile

Profile = TypeVar("Profile")
"""What the cache holds: a model.Profile, which drops itself here when closed (so the cache
names no class of its own)."""

DECODE_SETTINGS = ("XPROF_WIDGETS_FRAMEWORK_ROWS",)
"""Environment variables the decoders read (the XSpace decoder's framework rows): a profile
decoded under other values is another profile."""


@dataclass(frozen=True)
class CacheKey:
    identity: tuple
    """Which profile: the host files picked (resolved paths or URLs), and the decode settings."""
    versions: tuple
    """Which version of those files."""


def cache_key(fs: FileSystem, files: Sequence[HostFile]) -> CacheKey | None:
    """The key of these host files as they are now; None where one's version cannot be told."""
    versions = tuple(fs.version(fs.strip(f.path)) for f in files)
    if any(v is None for v in versions):
        return None
    settings = tuple(os.environ.get(name) for name in DECODE_SETTINGS)
    return CacheKey((tuple(v[0] for v in versions), settings), versions)


class ProfileCache:
    """Profiles by the files they were decoded from, held weakly."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[tuple, weakref.ref]] = {}
        # One open at a time: two threads (ipykernel 7 runs widget messages on a subshell)
        # asking for the same files must not decode them twice.
        self._lock = threading.RLock()

    def shared(self, key: CacheKey | None, decode: Callable[[], Profile]) -> Profile:
        """The live profile of `key`, else `decode()`'s, kept for the next caller."""
        if key is None:
            return decode()
        with self._lock:
            versions, ref = self._entries.get(key.identity, ((), None))
            found = ref() if ref is not None and versions == key.versions else None
            if found is not None:
                return found
            self._entries.pop(key.identity, None)  # a changed file's old profile is not reused
            profile = decode()
            self._entries[key.identity] = (key.versions, weakref.ref(profile, self._dropper(key)))
            return profile

    def _dropper(self, key: CacheKey) -> Callable[[weakref.ref], None]:
        def drop(ref: weakref.ref) -> None:
            if self._entries.get(key.identity, ((), None))[1] is ref:
                self._entries.pop(key.identity, None)
        return drop

    def forget(self, profile: Profile) -> None:
        """Drops `profile`'s entry: the next open of its files decodes them again."""
        with self._lock:
            for identity, (_, ref) in list(self._entries.items()):
                if ref() is profile:
                    del self._entries[identity]

    def clear(self) -> None:
        """Forgets every profile (each test starts from an empty cache)."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return sum(ref() is not None for _, ref in self._entries.values())


PROFILES = ProfileCache()
"""The kernel's profiles."""
