"""The order XProf shows sections and tracks in: devices by number, then hosts, then the rest."""

from __future__ import annotations

import re

# Device lines in the order the trace viewer stacks them; unknown lines follow by id.
_DEVICE_LINE_ORDER = [
    "Steps", "Sparse Core Steps", "XLA Modules", "Sparse Core Modules", "XLA Ops",
    "Sparse Core Ops", "Async XLA Ops", "XLA TraceMe", "Framework Ops", "TensorFlow Ops",
    "Framework Name Scope", "TensorFlow Name Scope", "Source code", "Host Offload Ops",
    "Launch Stats", "Tensor Core Sync Flag", "_counters_",
]
_DEVICE_RE = re.compile(r"/device:([A-Z_]+):(\d+)(.*)")


def natural_key(text: str) -> tuple:
    """'stream 10' after 'stream 9'."""
    return tuple(int(part) if part.isdigit() else part.lower()
                 for part in re.split(r"(\d+)", text))


def plane_kind(name: str) -> str:
    if name.startswith("/device:"):
        return "device"
    if name.startswith("/host:"):
        return "host"
    return "other"


def plane_sort_key(name: str) -> tuple:
    match = _DEVICE_RE.match(name)
    if match:
        kind, number, rest = match.groups()
        return (0, kind != "TPU", kind, int(number), natural_key(rest))
    if name == "/host:CPU":
        return (1, 0, name)
    if name.startswith("/host:"):
        return (1, 1, name)
    return (2, 0, name)


def line_sort_key(section_kind: str, name: str, line_id: int) -> tuple:
    if section_kind == "device":
        rank = _DEVICE_LINE_ORDER.index(name) if name in _DEVICE_LINE_ORDER else len(
            _DEVICE_LINE_ORDER)
        return (rank, natural_key(name), line_id)
    return (0, natural_key(name), line_id)
