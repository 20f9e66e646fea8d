"""The trace viewer's track order (trace/order.py): a PyTorch trace's GPU rows first, ranks in
rank order, each rank's GPU rows together; XProf profiles keep their own order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xprof_widgets.opening import open_profile
from xprof_widgets.trace.order import display_order
from xprof_widgets.widgets.trace_viewer import summarize

DATA = Path(__file__).resolve().parents[1] / "data"
PUBLIC = DATA / "public"


def section_runs(summary: dict) -> list[tuple[str, str]]:
    """(host, kind) of each run of tracks of one section, top to bottom; a section must be one run."""
    kinds = dict(zip(summary["sections"]["id"], zip(summary["sections"]["host"],
                                                   summary["sections"]["kind"], strict=True),
                     strict=True))
    runs: list[int] = []
    for section in summary["tracks"]["section_id"]:
        if not runs or runs[-1] != section:
            runs.append(section)
    assert len(runs) == len(set(runs)), "a section's tracks are drawn together"
    return [kinds[s] for s in runs]


def test_ranks_gpu_rows_first_in_rank_order():
    profile = open_profile(PUBLIC / "param" / "dlrm_v100_8rank")
    runs = section_runs(summarize(profile))
    ranks = [f"rank {r}" for r in range(8)]
    assert runs[:8] == [(r, "device") for r in ranks]  # was: rank 0's Python threads first
    assert all(kind == "host" for _, kind in runs[8:])
    hosts = [host for host, _ in runs[8:]]
    assert hosts == sorted(hosts, key=ranks.index)  # host sections: ranks in order too
    gpu = summarize(profile)["tracks"]
    first = gpu["section"][0]
    assert first == "python3 (0) GPU 0" and gpu["name"][:4] == ["stream 7", "stream 22",
                                                                  "stream 24", "stream 84"]


def test_one_rank_gpu_before_python_threads():
    profile = open_profile(PUBLIC / "hta" / "nccl_parser_config" / "nccl_data.json.gz")
    order = profile.tracks[profile.tracks["kind"] != "hidden"]
    assert order["section_kind"].iloc[0] == "host"  # the trace lists the Python threads first
    runs = section_runs(summarize(profile))
    assert runs[0][1] == "device" and all(kind == "host" for _, kind in runs[1:])


@pytest.mark.parametrize("path", [PUBLIC / "xprof" / "gpu_tf_2020",
                                  DATA / "tpu_v6e_inference.xplane.pb"])
def test_xprof_profiles_keep_their_order(path):
    profile = open_profile(path)
    shown = profile.tracks[profile.tracks["kind"] != "hidden"]
    assert summarize(profile)["tracks"]["id"] == [int(i) for i in shown.index]


def test_order_is_stable_and_puts_unknown_hosts_last():
    tracks = pd.DataFrame({
        "host": ["rank 1", "rank 1", "rank 0", "rank 0", "other", "rank 0"],
        "section_id": [0, 1, 2, 3, 4, 5],
        "section_kind": ["host", "device", "host", "device", "device", "device"],
    })
    order = display_order(tracks, ["rank 0", "rank 1"], kineto=True)
    assert order.tolist() == [3, 5, 1, 4, 2, 0]
    assert display_order(tracks, ["rank 0", "rank 1"], kineto=False).tolist() == list(range(6))
    assert display_order(tracks.iloc[:0], [], kineto=True).tolist() == []
    assert isinstance(order, np.ndarray)
