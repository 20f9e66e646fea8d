"""The Distributed view's per-rank split against Holistic Trace Analysis (HTA 0.5), run live on
PARAM's 8-rank DLRM run on V100s (tests/data/public/param): its times are whole microseconds,
so HTA's numbers need no rule of docs/from_hta.md applied.

- the overlap share of each rank is HTA's get_comm_comp_overlap, within its rounding;
- idle is HTA's temporal idle time; compute alone plus compute overlapping communication is
  HTA's compute time; exposed communication plus other work is its non-compute time;
- the kernel time is HTA's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_hta_parity import PCT_BOUND, hta_results

import xprof_widgets as xw
from xprof_widgets.analysis.distributed import analyze_distributed

DLRM = Path(__file__).resolve().parents[1] / "data" / "public" / "param" / "dlrm_v100_8rank"


def test_dlrm_ranks_split_as_hta_splits_them():
    ranks = analyze_distributed(xw.open_profile(DLRM)).ranks.set_index("rank")
    hta = hta_results(*sorted(DLRM.glob("*.json.gz")))
    temporal = hta.temporal.set_index("rank").loc[ranks.index]
    assert ranks["idle_us"].tolist() == temporal["idle_time(us)"].astype(np.float64).tolist()
    assert (ranks["compute_us"] + ranks["overlap_us"]).tolist() == \
        temporal["compute_time(us)"].astype(np.float64).tolist()
    assert (ranks["exposed_communication_us"] + ranks["other_us"]).tolist() == \
        temporal["non_compute_time(us)"].astype(np.float64).tolist()
    assert ranks["kernel_us"].tolist() == temporal["kernel_time(us)"].astype(np.float64).tolist()
    overlap = hta.overlap.set_index("rank").loc[ranks.index, "comp_comm_overlap_pctg"]
    gap = np.abs(ranks["comp_comm_overlap_pctg"].to_numpy() - overlap.to_numpy(np.float64))
    assert (gap <= PCT_BOUND["overlap"] + 1e-9).all(), gap
    assert (ranks["overlap_us"] > 0).all()  # every rank overlaps some: the check has teeth
