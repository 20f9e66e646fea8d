"""The Distributed view's cost: open a directory of rank traces, then the analysis and the view's
answer (`analyze_distributed`, skew, by kind, stragglers, report), each in a fresh process.

    python tests/bench/bench_distributed.py [--ranks 32] [--collectives 2000]

Rows: PARAM's 8-rank DLRM run (tests/data/public/param), and a made-up run of --ranks ranks, each
with --collectives NCCL collectives (all-reduce, all-gather, all-to-all in turn, kernel args as
PyTorch 2.1+ writes them, a random arrival per rank) and a compute kernel before each. Figures are
wall seconds (CPU seconds beside them) and peak RSS; nothing here asserts.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
from pathlib import Path

from common import measure, table

DLRM = Path(__file__).resolve().parents[1] / "data" / "public" / "param" / "dlrm_v100_8rank"
KERNELS = ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL",
           "ncclDevKernel_SendRecv")
NAMES = ("allreduce", "_allgather_base", "all_to_all")


def made_run(folder: Path, ranks: int, collectives: int) -> Path:
    """One Kineto trace per rank: compute, then a collective every 100 us, late by 0-20 us."""
    rng = random.Random(0)
    for rank in range(ranks):
        events = []
        for k in range(collectives):
            t = 100.0 * k
            late = rng.uniform(0, 20)
            events += [
                {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t,
                 "dur": 50, "args": {"stream": 7, "correlation": 2 * k}},
                {"ph": "X", "cat": "kernel", "name": KERNELS[k % 3], "pid": 0, "tid": 20,
                 "ts": t + 40 + late, "dur": 45 - late, "args": {
                     "stream": 20, "correlation": 2 * k + 1, "Collective name": NAMES[k % 3],
                     "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "dtype": "Float",
                     "Group size": ranks, "Process Group Name": "0", "Seq": k}}]
        doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1_700_000_000_000_000_000,
               "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks},
               "traceEvents": events}
        (folder / f"rank-{rank}.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    return folder


CODE = """
import time
t0 = time.perf_counter(); c0 = time.process_time()
import xprof_widgets as xw
from xprof_widgets.analysis.distributed import analyze_distributed
from xprof_widgets.widgets.distributed import report
profile = xw.open_profile({path!r})
t1 = time.perf_counter(); c1 = time.process_time()
a = analyze_distributed(profile)
a.skew(); a.by_kind(); a.stragglers(); report(a)
t2 = time.perf_counter(); c2 = time.process_time()
result = {{"open": t1 - t0, "open_cpu": c1 - c0, "view": t2 - t1, "view_cpu": c2 - c1,
          "kernels": len(a.instances), "matched": len(a.skew())}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--collectives", type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("DLRM V100, 8 ranks", DLRM),
                (f"made up, {args.ranks} ranks x {args.collectives} collectives",
                 made_run(Path(tmp), args.ranks, args.collectives))]
        for label, path in runs:
            r = measure(CODE.format(path=str(path)))
            rows.append([label, r["kernels"], r["matched"], f"{r['open']:.2f} ({r['open_cpu']:.2f})",
                         f"{r['view']:.2f} ({r['view_cpu']:.2f})", round(r["peak_rss_mb"])])
    print(table(["run", "collective kernels", "matched", "open s (cpu)", "analysis + view s (cpu)",
                 "peak RSS MB"], rows))


if __name__ == "__main__":
    main()
