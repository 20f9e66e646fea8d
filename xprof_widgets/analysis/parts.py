"""A tool's reading of one format: the one interface between a tool and the formats it reads.

A tool that answers from more than one format (Kernel Stats from XSpace GPU planes and from
Kineto kernels, Memory Profile from XProf's allocator events and from Kineto's `[memory]`
events) lists one `FormatPart` per format, in its order of preference, and reads the first the
profile holds (or, where formats add up, every one); it never branches on a format itself. Each
part answers in the tool's own columns. The XSpace part sits in the tool's module, each other
format's in that format's folder (`analysis/kineto/`), so a new format is a folder of parts and
one entry in the list of each tool it answers.

A part reads a whole profile, local or a pod: where it sums over hosts it runs a per-host
function through analysis/hosts.py, so the same reading runs in the kernel and on Dask workers.
Every part of a tool takes the tool's arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class FormatPart(Generic[T]):
    """What one format says for one tool."""

    format: str  # "xspace", "kineto"
    has_data: Callable[[Any], bool]  # cheap: whether a profile (local or a pod) holds it
    read: Callable[..., T]  # (profile, *the tool's arguments) -> the tool's columns


def present(profile: Any, parts: Sequence[FormatPart[T]]) -> list[FormatPart[T]]:
    """The parts whose data the profile holds, in the tool's order."""
    return [p for p in parts if p.has_data(profile)]


def first_present(profile: Any, parts: Sequence[FormatPart[T]]) -> FormatPart[T] | None:
    """The tool's preferred part among those the profile holds; None where it holds none."""
    found = present(profile, parts)
    return found[0] if found else None
