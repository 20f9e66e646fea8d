"""The order the trace viewer draws a profile's tracks in.

An XProf profile keeps its own order (devices, then hosts, as XProf draws them). A PyTorch
(Kineto) trace lists each process as the profiler met it, Python threads first, so the GPU rows
sit below hundreds of rows of Python stacks: there every GPU section comes first, ranks in rank
order (a multi-rank run's GPUs one under another, each rank's streams together), then the host
sections, ranks again in order. Within a rank, sections and tracks keep the profile's order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def display_order(tracks: pd.DataFrame, hosts: list[str], kineto: bool) -> np.ndarray:
    """Row positions of `tracks` (columns host, section_id, section_kind) in drawing order.

    `hosts` are the profile's hosts in rank order; `kineto` False keeps the given order.
    """
    n = len(tracks)
    if not kineto or not n:
        return np.arange(n)
    rank = pd.Index(hosts).get_indexer(tracks["host"].astype(str))
    rank = np.where(rank < 0, len(hosts), rank)  # a host not listed: after the ranks
    host_side = (tracks["section_kind"] != "device").to_numpy(bool)
    section = pd.factorize(tracks["section_id"])[0]  # sections in order of first appearance
    return np.lexsort((np.arange(n), section, rank, host_side))
