"""Turning XStat messages into plain Python values, with refs resolved and flows unpacked."""

from __future__ import annotations

from typing import Any

FLOW_DIRECTIONS = {0: "none", 1: "in", 2: "out", 3: "inout"}


def unpack_flow(value: int) -> dict[str, Any]:
    """Splits a `flow` stat: direction in the low 2 bits, a 56-bit id, a 6-bit category on top."""
    return {
        "id": (value >> 2) & ((1 << 56) - 1),
        "direction": FLOW_DIRECTIONS[value & 3],
        "category": value >> 58,
    }


def stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    """The value of one XStat: numbers as numbers, refs as the name they point to."""
    which = stat.WhichOneof("value")
    if which is None:
        return None
    value = getattr(stat, which)
    if which == "ref_value":
        return stat_names.get(value, f"<ref {value}>")
    if which == "bytes_value":
        return bytes(value)
    return value


def stats_dict(stats: Any, stat_names: dict[int, str]) -> dict[str, Any]:
    """A name -> value dict of repeated XStat, `flow` unpacked."""
    out: dict[str, Any] = {}
    for stat in stats:
        name = stat_names.get(stat.metadata_id, f"stat#{stat.metadata_id}")
        value = stat_value(stat, stat_names)
        if name == "flow" and isinstance(value, int):
            value = unpack_flow(value)
        out[name] = value
    return out
