"""PyTorch traces: our GPU time breakdowns beside HTA's, per corpus trace, values and seconds.

Each side runs in a fresh interpreter (a new runtime, no caches), so the seconds are what a user
meets on opening a trace and asking for the temporal breakdown, the kernel-type breakdown, the
communication-computation overlap and the idle time breakdown:

    .venv/bin/python tests/bench/bench_hta.py [--only NAME_PART]

The values are the shares printed side by side (idle / compute / non-compute of the temporal
breakdown, the COMPUTATION kernel type's share, the overlap); where they differ, the rule of
docs/from_hta.md that explains it is named in test_hta_parity.py. No timed asserts.
"""

from __future__ import annotations

import argparse
import gzip
import math
from pathlib import Path

from common import measure, table

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"

OURS = """
import time
t0 = time.perf_counter()
import xprof_widgets as xw
from xprof_widgets.analysis.kineto.gpu_time import comm_comp_overlap, idle_time_breakdown
from xprof_widgets.analysis.kineto.gpu_time import kernel_breakdown
from xprof_widgets.analysis.overview import time_breakdown
p = xw.open_profile({path!r})
t = time_breakdown(p); k = kernel_breakdown(p); o = comm_comp_overlap(p); i = idle_time_breakdown(p)
seconds = time.perf_counter() - t0
comp = k.loc[k["kernel_type"] == "COMPUTATION", "percentage"]
result = {{"seconds": seconds, "idle": float(t["idle_pct"].iat[0]),
          "compute": float(t["compute_pct"].iat[0]),
          "non_compute": float(t["non_compute_pct"].iat[0]),
          "computation": float(comp.iat[0]) if len(comp) else None,
          "overlap": float(o["comp_comm_overlap_pctg"].iat[0]) if len(o) else None}}
"""

HTA = """
import logging, shutil, tempfile, time, warnings
from pathlib import Path
warnings.simplefilter("ignore"); logging.disable(logging.CRITICAL)
t0 = time.perf_counter()
import hta.trace_analysis as hta_analysis
tmp = Path(tempfile.mkdtemp()); shutil.copy({path!r}, tmp / Path({path!r}).name)
a = hta_analysis.TraceAnalysis(trace_dir=str(tmp))
t = a.get_temporal_breakdown(visualize=False)
k, _ = a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
o = a.get_comm_comp_overlap(visualize=False)
i, _ = a.get_idle_time_breakdown(ranks=sorted(a.t.traces), visualize=False)
seconds = time.perf_counter() - t0
shutil.rmtree(tmp)
comp = k.loc[k["kernel_type"] == "COMPUTATION", "percentage"]
result = {{"seconds": seconds, "idle": float(t["idle_time_pctg"].iat[0]),
          "compute": float(t["compute_time_pctg"].iat[0]),
          "non_compute": float(t["non_compute_time_pctg"].iat[0]),
          "computation": float(comp.iat[0]) if len(comp) else None,
          "overlap": float(o["comp_comm_overlap_pctg"].iat[0]) if len(o) else None}}
"""


def gpu_traces(only: str | None) -> list[Path]:
    """Corpus traces with GPU work (events naming a stream), as the parity test selects them."""
    found = []
    for path in sorted(CORPUS.rglob("*.json*")):
        data = path.read_bytes()
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if b'"stream"' in text and b'"traceEvents"' in text and (only is None or only in str(path)):
            found.append(path)
    return found


def pair(ours: float | None, theirs: float | None) -> str:
    def one(v: float | None) -> str:
        return "—" if v is None or math.isnan(v) else f"{v:.2f}"
    return f"{one(ours)} / {one(theirs)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="only traces whose path contains this")
    args = parser.parse_args()
    rows = []
    for path in gpu_traces(args.only):
        try:
            ours = measure(OURS.format(path=str(path)))
        except Exception as exc:  # noqa: BLE001 - a row that says what failed, the rest go on
            ours = {"error": type(exc).__name__}
        try:
            hta = measure(HTA.format(path=str(path)))
        except Exception as exc:  # noqa: BLE001 - HTA refuses some traces; the row says so
            hta = {"error": type(exc).__name__}
        name = str(path.relative_to(CORPUS / "hta"))
        if "error" in ours or "error" in hta:
            rows.append([name, ours.get("error", "ok"), hta.get("error", "ok"), "", "", "", "",
                         "", ""])
            continue
        rows.append([name, f"{ours['seconds']:.2f}", f"{hta['seconds']:.2f}",
                     f"{ours['peak_rss_mb']:.0f} / {hta['peak_rss_mb']:.0f}",
                     pair(ours["idle"], hta["idle"]), pair(ours["compute"], hta["compute"]),
                     pair(ours["non_compute"], hta["non_compute"]),
                     pair(ours["computation"], hta["computation"]),
                     pair(ours["overlap"], hta["overlap"])])
    print(table(["trace", "ours s", "HTA s", "peak MB ours / HTA", "idle % ours / HTA",
                 "compute %", "non-compute %", "COMPUTATION kernels %", "comm overlap %"], rows))


if __name__ == "__main__":
    main()
