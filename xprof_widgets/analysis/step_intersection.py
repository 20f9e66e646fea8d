"""The steps common to every host of a multi-host run, as XProf finds them.

XProf (xprof/utils/step_intersection.cc) keeps only the steps all hosts ran, aligned to a chief
host: the chief is the host whose steps span the least time; every other host's step sequence is
slid against the chief's by the whole number of steps under which their step spans overlap the
most, ties going to the smallest non-negative shift, then the smallest negative one; the steps
every host has under its shift are kept and numbered as the chief numbers them. A host that ran
no step at all (a coordinator, or a capture that missed the loop) takes no part, where XProf
leaves out coordinators.

Rows are one per step and unit (`input_pipeline`'s unit steps): `step`, `name`, `start_ps`,
`duration_ps`, ..., already on the whole profile's timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class _Spans:
    step: np.ndarray  # step numbers, ascending
    name: np.ndarray
    begin: np.ndarray  # earliest start over the host's units (ps)
    end: np.ndarray  # latest end

    @property
    def total_ps(self) -> int:
        busy = self.end > self.begin
        return int(self.end[busy].max() - self.begin[busy].min()) if busy.any() else 0


def common_steps(hosts: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of the steps common to all hosts, renumbered and renamed as the chief's."""
    spans = [_spans(rows) for rows in hosts]
    taking = [h for h, s in enumerate(spans) if len(s.step)]
    if not taking:
        return pd.concat(hosts, ignore_index=True)
    chief = min(taking, key=lambda h: spans[h].total_ps)
    shifts = {h: (0, 0, len(spans[h].step)) if h == chief else _alignment(spans[h], spans[chief])
              for h in taking}
    lo = max(begin_chief for _, begin_chief, _ in shifts.values())
    hi = min(begin_chief + n for _, begin_chief, n in shifts.values())
    kept = []
    for h in taking:
        begin_host, begin_chief, _ = shifts[h]
        first = begin_host + lo - begin_chief
        own = spans[h].step[first:first + max(0, hi - lo)]
        rows = hosts[h][hosts[h]["step"].isin(own)].copy()
        position = rows["step"].map(dict(zip(own.tolist(), range(own.shape[0]), strict=True)))
        rows["step"] = spans[chief].step[lo + position.to_numpy(np.int64)]
        rows["name"] = spans[chief].name[lo + position.to_numpy(np.int64)]
        kept.append(rows)
    return pd.concat(kept, ignore_index=True)


def _spans(rows: pd.DataFrame) -> _Spans:
    if not len(rows):
        empty = np.empty(0, np.int64)
        return _Spans(empty, np.empty(0, object), empty, empty)
    frame = rows.assign(end_ps=rows["start_ps"] + rows["duration_ps"])
    by_step = frame.groupby("step", sort=True).agg(
        name=("name", "first"), begin=("start_ps", "min"), end=("end_ps", "max"))
    return _Spans(by_step.index.to_numpy(np.int64), by_step["name"].to_numpy(object),
                  by_step["begin"].to_numpy(np.int64), by_step["end"].to_numpy(np.int64))


def _alignment(host: _Spans, chief: _Spans) -> tuple[int, int, int]:
    """(first host step, first chief step, steps) of the best shift of `host` against `chief`."""
    n, m = len(host.step), len(chief.step)
    overlap = _overlap_by_shift(host, chief)
    best = 0
    for k in [*range(m), *range(-1, -n, -1)]:  # XProf's order, so ties resolve as in XProf
        if overlap[k + n - 1] > overlap[best + n - 1]:
            best = k
    begin_host, begin_chief = max(0, -best), max(0, best)
    return begin_host, begin_chief, min(n - begin_host, m - begin_chief)


def _overlap_by_shift(host: _Spans, chief: _Spans) -> np.ndarray:
    """Time the two step sequences overlap, for each shift k = chief index - host index (at
    k + len(host) - 1), from one walk through both sequences in time order."""
    n, m = len(host.step), len(chief.step)
    out = np.zeros(n + m - 1, np.float64)
    hb, he, cb, ce = (a.tolist() for a in (host.begin, host.end, chief.begin, chief.end))
    i = j = 0
    while i < n and j < m:
        if he[i] <= hb[i]:
            i += 1
            continue
        if ce[j] <= cb[j]:
            j += 1
            continue
        out[j - i + n - 1] += max(0, min(he[i], ce[j]) - max(hb[i], cb[j]))
        if he[i] < ce[j]:
            i += 1
        elif ce[j] < he[i]:
            j += 1
        else:
            i += 1
            j += 1
    return out
