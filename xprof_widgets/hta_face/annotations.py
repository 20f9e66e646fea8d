"""GPU kernels with the user annotation they ran under, as HTA attributes them.

Kineto mirrors each `record_function` range onto the GPU stream its kernels ran on
(`gpu_user_annotation` events). HTA gives a kernel the annotation on its GPU and stream (its track here) whose
span overlaps the kernel's; where several do (nested ranges), the shortest, i.e. the innermost.
A kernel of no duration overlaps nothing (pandas' reading of an empty interval, which HTA uses).
Names are kept whole: HTA's `shortern_names` strips template and call arguments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ANNOTATION = "gpu_user_annotation"


def kernels_with_annotations(events: pd.DataFrame, expand_names: bool) -> pd.DataFrame | None:
    """The rank's GPU kernels (its table's columns) with `user_annotation`, the innermost
    overlapping annotation's name ("" for none); with `expand_names`, HTA's `s_name` and
    `s_user_annotation` as well. None where the trace has no GPU annotations."""
    is_annotation = (events["cat"] == ANNOTATION).to_numpy()
    if not is_annotation.any():
        return None
    kernels = events[events["stream"] != -1].sort_values(["track", "ts"], kind="stable")
    notes = events[is_annotation].sort_values("dur", ascending=False, kind="stable")
    found = np.full(len(kernels), "", dtype=object)
    lanes = kernels.groupby("track", sort=False).indices
    starts, ends = kernels["ts"].to_numpy(), kernels["end"].to_numpy()
    running_end = kernels.groupby("track", sort=False)["end"].cummax().to_numpy()
    for track, lo, hi, name in zip(notes["track"], notes["ts"], notes["end"],
                                   notes["name"].astype(str), strict=True):
        lane = lanes.get(track)
        if lane is None:
            continue
        first, last = lane[0], lane[-1] + 1  # a lane is one run of the sorted kernels
        begin = first + np.searchsorted(running_end[first:last], lo, side="right")
        stop = first + np.searchsorted(starts[first:last], hi, side="left")
        hits = np.arange(begin, stop)
        hits = hits[(starts[hits] < hi) & (ends[hits] > lo) & (ends[hits] > starts[hits])]
        found[hits] = name  # shorter annotations come later: the innermost wins
    out = kernels.assign(user_annotation=found)
    if expand_names:
        out = out.assign(s_name=out["name"].astype(str), s_user_annotation=found)
    return out.reset_index(drop=True)
