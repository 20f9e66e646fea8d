"""Utilization viewer (XProf's utilization_viewer): achieved against peak for each unit of a TPU
chip, from the performance counters the profile sampled.

As XProf reads them (xprof/convert/xplane_to_utilization_viewer.cc): every `/device:TPU:` plane
that states `device_id` and whose `device_type_string` is "TPU v6 Lite" or "TPU v7x"; each line
of it is one sample (the line's id), whose events with `counter_value` (on the event or its
metadata) set the counter named by `performance_counter_id` (event, else metadata) to that
value. What a sample gives is utilization_metrics.py.

Each metric is a weighted sum of counters, so a chip's samples are one matrix (samples x
counters) and its metrics one product with a weight matrix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .hosts import host_parts
from .steps import track_events
from .utilization_metrics import CHIPS, Metric

COLUMNS = ["host", "device", "sample", "node", "name", "achieved", "peak", "unit", "utilization"]
"""XProf's table (host .. unit) and `utilization` = achieved / peak (NaN where the peak is 0)."""
SUPPORTED = tuple(CHIPS)


def _evaluate(metrics: list[Metric], values: np.ndarray, column: dict[int, int]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """achieved, peak and whether XProf lists each (samples x metrics) from the counter matrix
    (samples x counters, uint64; `column` maps a counter id to its column)."""
    def col(counter: int) -> np.ndarray:
        at = column.get(counter)
        return values[:, at] if at is not None else np.zeros(values.shape[0], np.uint64)

    weights = np.zeros((values.shape[1], len(metrics)), np.uint64)
    for m, metric in enumerate(metrics):
        for counter, weight in metric.terms:
            if counter in column:
                weights[column[counter], m] += np.uint64(weight)
    sums = values @ weights  # uint64, wrapping as XProf's sums do
    achieved = sums.astype(np.float64) / np.array([m.divisor for m in metrics], np.float64)
    at = {metric.name: m for m, metric in enumerate(metrics)}
    peak = np.empty_like(achieved)
    listed = np.ones(achieved.shape, bool)
    for m, metric in enumerate(metrics):
        kind, *args = metric.peak
        if kind == "x":
            peak[:, m] = (col(args[0]) * np.uint64(args[1])).astype(np.float64)
        elif kind == "div":
            peak[:, m] = (col(args[0]) // np.uint64(args[1])).astype(np.float64)
        elif kind == "rate":
            peak[:, m] = args[1] * (col(args[0]).astype(np.float64) / args[2])
        else:
            peak[:, m] = sums[:, at[args[0]]].astype(np.float64)
        if metric.gate is not None:
            listed[:, m] = col(metric.gate) > 0
        if metric.share_of is not None:
            listed[:, m] &= sums[:, at[metric.share_of]] > 0
    return achieved, peak, listed


def _stat_or_metadata(profile: Profile, events: np.ndarray, stat: str) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """An integer stat from the event, else from its metadata: (present, uint64 values)."""
    present, bits = profile.stat_ints(events, stat)
    meta_stats = profile.metadata["stats"].to_numpy()
    rows, where = np.unique(profile.meta[events], return_inverse=True)
    per_row = [meta_stats[r].get(stat) for r in rows.tolist()]
    has = np.array([isinstance(v, int | float) for v in per_row], bool)
    value = np.array([int(v) & (2**64 - 1) if isinstance(v, int) else _from_double(v)
                      if isinstance(v, float) else 0 for v in per_row], np.uint64)
    where = where.reshape(-1)
    take = ~present & has[where]
    bits = bits.copy()
    bits[take] = value[where][take]
    return present | has[where], bits


def _from_double(value: float) -> int:
    """A double counter value as XProf takes it: truncated, clamped to uint64."""
    return 0 if not value > 0 else min(int(value), 2**64 - 1)


def _counter_values(profile: Profile, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`counter_value` of counter events: an integer on the event, else on its metadata, else a
    double on the event (read one by one: counter events are few)."""
    present, values = _stat_or_metadata(profile, events, "counter_value")
    missing = np.flatnonzero(~present)
    if missing.shape[0]:
        doubles = profile.stat_column(events[missing], "counter_value")
        is_double = np.array([isinstance(v, float) for v in doubles.tolist()], bool)
        present[missing[is_double]] = True
        values[missing[is_double]] = [_from_double(v) for v in doubles[is_double].tolist()]
    return present, values


def utilization_part(profile: Profile) -> pd.DataFrame:
    """One host's utilization rows (COLUMNS), plane by plane, sample by sample."""
    tracks = profile.built_tracks
    frames = []
    for section_id, row in profile.sections.iterrows():
        stats = row["stats"] or {}
        if not str(row["name"]).startswith("/device:TPU:") or "device_id" not in stats:
            continue
        metrics = CHIPS.get(str(stats.get("device_type_string", "")))
        if metrics is None:
            continue
        own = tracks[(tracks["section_id"] == section_id) & (tracks["kind"] != "hidden")]
        events = track_events(profile, own.index.to_numpy())
        has_id, counter = _stat_or_metadata(profile, events, "performance_counter_id")
        keep = has_id & (counter != 0)
        events, counter = events[keep], counter[keep]
        has_value, value = _counter_values(profile, events)
        if not has_value.any():
            continue
        events, value, counter = events[has_value], value[has_value], counter[has_value]
        line = own.loc[profile.track_of(events), "line_id"].to_numpy(np.int64)
        samples, sample_at = np.unique(line, return_inverse=True)  # by id (XProf: file order)
        sample_at = sample_at.reshape(-1)
        counters, counter_at = np.unique(counter, return_inverse=True)
        matrix = np.zeros((samples.shape[0], counters.shape[0]), np.uint64)
        matrix[sample_at, counter_at.reshape(-1)] = value  # a repeat: the last wins
        achieved, peak, listed = _evaluate(metrics, matrix, {int(c): i for i, c in
                                                             enumerate(counters.tolist())})
        s, m = np.nonzero(listed)
        frames.append(pd.DataFrame({
            "host": row["host"], "device": int(stats["device_id"]),
            "sample": samples[s], "node": np.array([metrics[i].node for i in m], np.int64),
            "name": [metrics[i].name for i in m], "achieved": achieved[s, m],
            "peak": peak[s, m], "unit": [metrics[i].unit for i in m]}))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["utilization"] = np.where(out["peak"] > 0, out["achieved"] / out["peak"], np.nan)
    return out


def analyze_utilization(profile: Profile) -> pd.DataFrame:
    """Every host's utilization rows (COLUMNS); computed once per profile."""
    def build() -> pd.DataFrame:
        parts = [p.part for p in host_parts(profile, utilization_part) if len(p.part)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    return profile.memo(("utilization_viewer",), build)


def utilization_viewer_available(profile: Profile) -> bool:
    """Whether a supported TPU chip sampled the counters the viewer reads."""
    return bool(len(analyze_utilization(profile)))
