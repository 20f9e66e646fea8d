"""An HTA notebook run twice: with HTA 0.5's TraceAnalysis, then with ours (only the import
changed), each in a fresh interpreter, seconds per call side by side.

    .venv/bin/python tests/bench/bench_hta_face.py [--only NAME_PART]

The notebook is the calls of HTA's own trace_analysis_demo: open the run, the temporal, idle,
kernel and overlap breakdowns, launch stats, queue length summary, copy bandwidth summary, user
annotations, aten op launch delays, profiler steps and stragglers, and the traces written again
with counters (all ranks, visualize=False).
HTA's methods that cannot run here are shown as `—`. Take the figures on a quiet machine (the
load average is printed); CPU seconds of the whole run are beside the wall seconds. No asserts.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from common import measure, table

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"
RUNS = {
    "trace_filter (2 ranks, 0.2 MB)": CORPUS / "hta" / "trace_filter",
    "DLRM V100 (8 ranks, 0.4 MB)": CORPUS / "param" / "dlrm_v100_8rank",
    "df_index_resolver (1 rank, 3 MB)": CORPUS / "hta" / "df_index_resolver",
    "mtia_rank_0 (1 rank, 3 MB)": CORPUS / "hta" / "mtia_trace_single_rank",
}
CALLS = [
    ("get_temporal_breakdown", "a.get_temporal_breakdown(visualize=False)"),
    ("get_idle_time_breakdown", "a.get_idle_time_breakdown(ranks=ranks, visualize=False)"),
    ("get_gpu_kernel_breakdown", "a.get_gpu_kernel_breakdown(visualize=False)"),
    ("get_comm_comp_overlap", "a.get_comm_comp_overlap(visualize=False)"),
    ("get_cuda_kernel_launch_stats",
     "a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)"),
    ("get_queue_length_summary", "a.get_queue_length_summary(ranks=ranks)"),
    ("get_memory_bw_summary", "a.get_memory_bw_summary(ranks=ranks)"),
    ("get_gpu_user_annotation_breakdown",
     "a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)"),
    ("get_aten_op_kernels_and_delay", "a.get_aten_op_kernels_and_delay(ranks=ranks)"),
    ("get_profiler_steps", "a.get_profiler_steps()"),
    ("get_potential_stragglers", "a.get_potential_stragglers()"),
    ("generate_trace_with_counters", "a.generate_trace_with_counters(ranks=ranks)"),
]
NOTEBOOK = """
import logging, os, shutil, tempfile, time, warnings
warnings.simplefilter("ignore"); logging.disable(logging.CRITICAL)
start_cpu = time.process_time()
t0 = time.perf_counter()
{imports}
tmp = tempfile.mkdtemp()
for f in os.listdir({folder!r}):
    shutil.copy(os.path.join({folder!r}, f), tmp)
a = TraceAnalysis(trace_dir=tmp)
result = {{"open": time.perf_counter() - t0}}
ranks = {ranks}
for name, call in {calls!r}:
    t1 = time.perf_counter()
    try:
        eval(call)
        result[name] = time.perf_counter() - t1
    except Exception:
        result[name] = float("nan")
result["total"] = time.perf_counter() - t0
result["cpu"] = time.process_time() - start_cpu
shutil.rmtree(tmp)
"""
IMPORTS = {"HTA 0.5": "from hta.trace_analysis import TraceAnalysis",
           "ours": "from xprof_widgets import TraceAnalysis"}
RANKS = "sorted(a.t.traces)"
OUR_RANKS = "sorted(a._tables())"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}")
    for label, folder in RUNS.items():
        if args.only not in label:
            continue
        got = {side: measure(NOTEBOOK.format(imports=imports, folder=str(folder),
                                             ranks=RANKS if side == "HTA 0.5" else OUR_RANKS,
                                             calls=CALLS))
               for side, imports in IMPORTS.items()}
        rows = [[step, got["HTA 0.5"][step], got["ours"][step],
                 got["HTA 0.5"][step] / got["ours"][step] if got["ours"][step] else None]
                for step in ["open", *(name for name, _ in CALLS), "total", "cpu",
                             "peak_rss_mb"]]
        print(f"\n### {label}\n")
        print(table(["step (s; peak MB)", "HTA 0.5", "ours", "HTA / ours"], rows))


if __name__ == "__main__":
    main()
