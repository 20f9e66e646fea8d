"""A Chrome trace's top-level members besides `traceEvents`: what Kineto writes there."""

from __future__ import annotations

from typing import Any

from .chrome_build import ChromeBuilder


def apply_header(builder: ChromeBuilder, header: dict[str, Any]) -> None:
    """Kineto's time origin, rank and GPUs, onto the builder."""
    builder.base_ns = _base_ns(header, builder.notes)
    if isinstance(header.get("distributedInfo"), dict):  # Kineto's rank, world size, backend
        builder.section_stats["distributedInfo"] = header["distributedInfo"]
    builder.device_properties = _device_properties(header)


def _device_properties(header: dict) -> dict[int, dict]:
    """Kineto's `deviceProperties` (the GPU's name, memory, SM count) by device id, which is
    the pid of that GPU's process in the trace."""
    listed = header.get("deviceProperties")
    if not isinstance(listed, list):
        return {}
    return {d["id"]: d for d in listed if isinstance(d, dict) and type(d.get("id")) is int}


def _base_ns(header: dict, notes: list[str]) -> int:
    """Kineto's `baseTimeNanoseconds`: the epoch nanosecond its `ts` values count from."""
    value = header.get("baseTimeNanoseconds")
    if value is None:
        return 0
    if type(value) is int:
        return value
    if type(value) is str and value.strip().isdigit():
        return int(value)
    if type(value) is float and value.is_integer() and abs(value) < 2.0**63:
        return int(value)
    notes.append(f"ignored a baseTimeNanoseconds that is not an integer ({str(value)[:40]})")
    return 0
