"""The analyses' tables in `Profile.sql`: `step` (input pipeline) and `op` (op profile), and the
category and program of ops on `slice` where only the op profile knows them (XLA ops on CPU
threads name their op in per-event stats; TPU op metadata carries it and needs nothing here).

Registered through profile/sql.py's hooks when that module imports this one on a first query.
Times are integer nanoseconds, as every other SQL table's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.model import Profile
from ..profile.sql import register_slice_columns, register_table
from .input_pipeline import STEP_PARTS, analyze_input_pipeline
from .op_profile import OP_COLUMNS, analyze_op_profile

STEP_TABLE = ["step", "name", "ts", "dur", *[p.removesuffix("_us") + "_dur" for p in STEP_PARTS],
              "input_share", "device"]


def step_table(profile: Profile) -> pd.DataFrame:
    """One row per step: number, name, ts, dur and the breakdown's parts as `<part>_dur`."""
    steps = analyze_input_pipeline(profile).steps
    out = pd.DataFrame({"step": steps["step"].to_numpy(np.int64),
                        "name": steps["name"].astype(object).to_numpy(),
                        "ts": _ns(steps["start_us"]), "dur": _ns(steps["duration_us"])})
    for part in STEP_PARTS:
        out[part.removesuffix("_us") + "_dur"] = _ns(steps[part])
    out["input_share"] = steps["input_share"].to_numpy(np.float64)
    out["device"] = steps["device"].astype(object).to_numpy()
    return out[STEP_TABLE]


def op_table(profile: Profile) -> pd.DataFrame:
    """The op profile's table (its columns, `_us` for times), empty when there are no ops."""
    try:
        ops = analyze_op_profile(profile).to_dataframe()
    except ProfileError:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in OP_COLUMNS})
    ops["program_id"] = ops["program_id"].astype(np.uint64)  # TPU ids use all 64 bits
    return ops


def op_names(profile: Profile) -> pd.DataFrame:
    """Per metadata row named like an op: its category, and its program when one program has
    an op of that name (NULL where several do)."""
    empty = pd.DataFrame({"meta": pd.Series(dtype=np.int64), "category": [], "program": []})
    if profile.metadata["stats"].map(lambda s: "hlo_category" in s).any():
        return empty  # TPU: the metadata says it
    ops = op_table(profile)
    if not len(ops):
        return empty
    by_name = ops.groupby("name").agg(category=("category", "first"),
                                      programs=("program", "unique"))
    names = profile.metadata["display_name"]
    known = names.isin(by_name.index).to_numpy()
    chosen = by_name.loc[names[known]]
    return pd.DataFrame({"meta": np.flatnonzero(known),
                         "category": chosen["category"].to_numpy(object),
                         "program": [p[0] if len(p) == 1 else None for p in chosen["programs"]]})


def _ns(us: pd.Series) -> np.ndarray:
    return np.round(us.to_numpy(np.float64) * 1000).astype(np.int64)


register_table("step", step_table)
register_table("op", op_table)
register_slice_columns(op_names)
