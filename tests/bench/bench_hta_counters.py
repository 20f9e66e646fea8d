"""HTA's `generate_trace_with_counters` on big Kineto traces: ours beside HTA 0.5's, each in a
fresh interpreter, the trace alone in a folder of its own (a copy: both write beside it).

    .venv/bin/python tests/bench/bench_hta_counters.py [--sizes 60M,250M] [--formats gz,plain]

The traces are bench_kineto.py's (HTA's df_index_resolver repeated to the size; made there once
and cached). Seconds of `TraceAnalysis(trace_dir=...)` and of the call, the peak RSS of the
process, and the size of the file written. Take the figures on a quiet machine. No asserts.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import tempfile

from bench_kineto import SOURCE, big_trace, corpus_path, cut
from common import CACHE, measure, table

RUN = """
import logging, os, time, warnings
warnings.simplefilter("ignore"); logging.disable(logging.CRITICAL)
t0 = time.perf_counter()
{imports}
a = TraceAnalysis(trace_dir={folder!r})
t1 = time.perf_counter()
a.generate_trace_with_counters(ranks={ranks})
t2 = time.perf_counter()
written = [f for f in os.listdir({folder!r}) if "_with_counters" in f]
result = {{"open": t1 - t0, "write": t2 - t1, "total": t2 - t0,
          "out_mb": os.path.getsize(os.path.join({folder!r}, written[0])) / 1e6}}
"""
SIDES = {"HTA 0.5": ("from hta.trace_analysis import TraceAnalysis", "sorted(a.t.traces)"),
         "ours": ("from xprof_widgets import TraceAnalysis", "sorted(a._tables())")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="60M,250M")
    parser.add_argument("--formats", default="gz")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}")
    template = functools.cache(lambda: cut(corpus_path(SOURCE)))
    rows = []
    for label in args.sizes.split(","):
        for fmt in args.formats.split(","):
            source = big_trace(corpus_path(SOURCE), label, fmt, CACHE / "kineto", template)
            got = {}
            for side, (imports, ranks) in SIDES.items():
                folder = tempfile.mkdtemp()
                shutil.copy(source, folder)
                try:
                    got[side] = measure(RUN.format(imports=imports, folder=folder, ranks=ranks))
                finally:
                    shutil.rmtree(folder)
            for step in ("open", "write", "total", "peak_rss_mb", "out_mb"):
                theirs, ours = got["HTA 0.5"][step], got["ours"][step]
                rows.append([f"{label} {fmt}", step, theirs, ours,
                             theirs / ours if step in ("open", "write", "total") else None])
    print(table(["trace", "step (s; MB)", "HTA 0.5", "ours", "HTA / ours"], rows))


if __name__ == "__main__":
    main()
