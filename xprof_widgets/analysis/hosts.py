"""Per-host parts of an analysis, wherever the hosts are.

An analysis that sums over hosts is written as a part computed on one host's profile and a
combine step over the parts. `host_parts` runs the part on every host: on a local `Profile` over
its single-host profiles (`Profile.per_host`), on a distributed profile (xprof_widgets.pod) on
the Dask worker that holds each host. Both hand back the same `HostPart`s, so a local run and a
distributed one combine identical inputs and cannot drift apart.

A part is computed in its host's own frame (times after that host's first event, its own track
ids); `HostPart` says how to read it in the whole profile's frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")


@dataclass(frozen=True)
class HostPart(Generic[T]):
    """One host's part and where the host sits in the whole profile."""

    host: str
    part: T
    shift_ps: int  # add to the part's times to read them on the whole profile's timeline
    track_base: int  # add to the part's track ids
    section_base: int  # add to the part's section ids


def host_parts(profile: Any, part: Callable[..., T], *args: Any) -> list[HostPart[T]]:
    """`part(host_profile, *args)` for every host of `profile`, in host order.

    `part` must be a module-level function returning plain data (it may run on a Dask worker,
    and its result travels back to the kernel).
    """
    if hasattr(profile, "map_hosts"):  # a distributed profile runs it where its hosts live
        return profile.map_hosts(part, *args)
    tracks, sections = profile.built_tracks, profile.sections
    out = []
    for host_profile in profile.per_host():
        host = host_profile.hosts[0]
        out.append(HostPart(
            host=host, part=part(host_profile, *args),
            shift_ps=int(profile.host_shifts_ps[profile.hosts.index(host)]),
            track_base=_first(tracks["host"].to_numpy() == host),
            section_base=_first(sections["host"].to_numpy() == host)))
    return out


def stacked_parts(profile: Any, part: Callable[..., pd.DataFrame], columns: list[str]
                  ) -> pd.DataFrame:
    """Every host's rows of a part answering a frame, host after host; an empty frame of
    `columns` when no host has any."""
    frames = [p.part for p in host_parts(profile, part) if len(p.part)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _first(mask: np.ndarray) -> int:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.shape[0] else 0
