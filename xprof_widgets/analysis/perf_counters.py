"""Performance counters (XProf's perf_counters): the hardware counters a TPU or GPU profile
samples, one row per counter and sample.

As XProf reads them (xprof/convert/xplane_to_perf_counters.cc): on every `/device:TPU:` and
`/device:GPU:` plane that states its chip (`global_chip_id`, else `device_id`), each event with a
`counter_value` stat (on the event or its metadata) is a counter: the line is the kernel (a GPU
kernel's fingerprint; on TPU the sample's line) and its id the sample number, the event's name
(lower case) the counter, with its `performance_counter_description` and the counter sets it
belongs to (`performance_counter_sets`, e.g. "issue").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .hosts import stacked_parts
from .steps import track_events

COLUMNS = ["host", "chip", "kernel", "sample", "counter", "value", "description", "set"]
"""XProf's perf counters table (its value printed in hex too; ours is the integer)."""
_DEVICE_PLANES = ("/device:TPU:", "/device:GPU:")


def perf_counters_part(profile: Profile) -> pd.DataFrame:
    """One host's counters (COLUMNS), in XProf's order: plane by plane, line by line."""
    sections = profile.sections
    tracks = profile.built_tracks
    frames = []
    for section_id, row in sections.iterrows():
        if not str(row["name"]).startswith(_DEVICE_PLANES):
            continue
        stats = row["stats"] or {}
        chip = stats.get("global_chip_id", stats.get("device_id"))
        if chip is None:
            continue
        own = tracks[(tracks["section_id"] == section_id) & (tracks["kind"] != "hidden")]
        events = track_events(profile, own.index.to_numpy())
        present, bits = profile.stat_ints(events, "counter_value")
        from_meta = _metadata_values(profile, events)
        keep = present | ~np.isnan(from_meta)
        if not keep.any():
            continue
        events = events[keep]
        values = bits[keep].copy()  # uint64: counters can pass 2**53
        from_file = present[keep]
        values[~from_file] = from_meta[keep][~from_file].astype(np.uint64)
        where = own.loc[profile.track_of(events)]
        frames.append(pd.DataFrame({
            "host": row["host"], "chip": int(chip),
            "kernel": where["name"].to_numpy(dtype=object),
            "sample": where["line_id"].to_numpy(np.int64),  # XProf's sample: the line's id
            "counter": [str(n).lower() for n in profile.display_names[profile.meta[events]]],
            "value": values,
            "description": _texts(profile, events, "performance_counter_description"),
            "set": _texts(profile, events, "performance_counter_sets")}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def _metadata_values(profile: Profile, events: np.ndarray) -> np.ndarray:
    """`counter_value` stated on the events' metadata (NaN where not)."""
    stats = profile.metadata["stats"].to_numpy()
    rows, where = np.unique(profile.meta[events], return_inverse=True)
    per_row = np.array([float(stats[r].get("counter_value", np.nan)) for r in rows.tolist()])
    return per_row[where.reshape(-1)] if rows.shape[0] else np.empty(0)


def _texts(profile: Profile, events: np.ndarray, stat: str) -> list[str]:
    values = profile.stat_column(events, stat)
    meta = profile.metadata["stats"].to_numpy()[profile.meta[events]]
    return [str(v) if v is not None else str(m.get(stat, "")) for v, m in
            zip(values.tolist(), meta.tolist(), strict=True)]


def analyze_perf_counters(profile: Profile) -> pd.DataFrame:
    """Every host's counters (COLUMNS); computed once per profile."""
    return profile.memo(("perf_counters",),
                        lambda: stacked_parts(profile, perf_counters_part, COLUMNS))


def perf_counters_available(profile: Profile) -> bool:
    """Whether any device plane samples counters (the suite's tab, as XProf lists the tool)."""
    return bool(len(analyze_perf_counters(profile)))
