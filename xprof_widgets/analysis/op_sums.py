"""Framework op rows as each format's part gives them (analysis/parts.py): one side's per-op
sums (`operation`, `type`, SUMS, `eager`), added up over hosts, with the side's IDLE row; the
Framework Op Stats tool (framework_op_stats.py) turns both sides into XProf's table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .op_profile import IDLE

SUMS = ["occurrences", "time_ps", "self_time_ps", "flops", "model_flops", "bytes_accessed"]


@dataclass(frozen=True)
class Peaks:
    """The device's peaks that decide `bound_by` (NaN: unknown, never the bottleneck)."""

    flops: float = math.nan  # FLOP/s
    hbm_bandwidth: float = math.nan  # bytes/s


@dataclass(frozen=True)
class OpSides:
    """What a format says for Framework Op Stats: each side's op sums (IDLE row included where
    the side has a plane) and time, the device's peaks and kind ("TPU", "GPU", "CPU", "")."""

    device: pd.DataFrame
    host: pd.DataFrame
    device_total_ps: int
    host_total_ps: int
    peaks: Peaks
    device_kind: str


def with_idle(ops: pd.DataFrame, total_ps: int) -> pd.DataFrame:
    """The side's ops and its IDLE row: the time no op ran (never below zero)."""
    idle = float(max(0, total_ps - ops["self_time_ps"].sum()))
    row = pd.DataFrame({"operation": [IDLE], "type": [IDLE], "occurrences": [0],
                        "time_ps": [idle], "self_time_ps": [idle], "flops": [0.0],
                        "model_flops": [0.0], "bytes_accessed": [0.0], "eager": [False]})
    return pd.concat([ops, row], ignore_index=True) if len(ops) else row


def combine_ops(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """One table from per-host (or per-line) op sums: same-named ops add up."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return empty_ops()
    frame = pd.concat(parts, ignore_index=True)
    return by_operation(frame)


def by_operation(frame: pd.DataFrame, occurrences: str = "sum") -> pd.DataFrame:
    """Same-named ops summed into one row; a device framework op occurs as often as the most
    frequent of its HLO ops (`occurrences="max"`), as XProf counts it."""
    return frame.groupby("operation", sort=False).agg(
        type=("type", "first"), occurrences=("occurrences", occurrences),
        time_ps=("time_ps", "sum"), self_time_ps=("self_time_ps", "sum"),
        flops=("flops", "sum"), model_flops=("model_flops", "sum"),
        bytes_accessed=("bytes_accessed", "sum"), eager=("eager", "any")).reset_index()


def empty_ops() -> pd.DataFrame:
    return pd.DataFrame({"operation": pd.Series(dtype=object), "type": pd.Series(dtype=object),
                         **{c: pd.Series(dtype=np.float64) for c in SUMS},
                         "eager": pd.Series(dtype=bool)})
