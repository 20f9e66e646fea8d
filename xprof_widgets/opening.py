"""`open_profile`, the one entry to a profile: it picks where the hosts are decoded (here in the
kernel, profile/open.py, or on a Dask cluster, pod/), so no floor below knows of the other; `close`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .profile.model import Profile
from .profile.open import choose, open_local

if TYPE_CHECKING:
    from .pod.profile import PodProfile


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
    if isinstance(path, Profile) or is_pod(path):
        return path
    chosen = choose(path, run, host)
    if client is None:
        return open_local(chosen)
    from .pod.profile import open_pod  # Dask's side loads only when a cluster is asked for

    return open_pod(client, chosen.files, source=chosen.path, run=chosen.run, runs=chosen.runs)


def close(profile: Profile | PodProfile) -> None:
    """Releases an opened profile for good (`Profile.close`): the kernel drops its data now,
    not when the last widget showing it goes, and the next open decodes the files again."""
    profile.close()


def is_pod(value: Any) -> bool:
    """Whether `value` is a PodProfile, asked without importing Dask's side."""
    pod = sys.modules.get("xprof_widgets.pod.profile")  # loaded by whoever made a PodProfile
    return pod is not None and isinstance(value, pod.PodProfile)
