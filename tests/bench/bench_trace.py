"""Trace index benchmark: open + index + first window, pan/zoom windows, search, flows.

    python tests/bench/bench_trace.py [--sizes 1e6 5e6 [5e7]] [--steps 200] [--width 1600]

Each size runs in a fresh process (peak RSS from ru_maxrss; numba kernels already compiled and
cached on disk). Columns: seconds from nothing to the first full-range window encoded (open,
index build and that window), peak RSS then, index bytes per event; window + encode times over
a random walk of pans and zooms (p50/p95/max) and the largest answer; search times; the first
flows request (edge list built) and peak RSS after it. The machine's load average is printed:
take figures when it is low. XProf's first `trace_viewer@` call (what its UI sends first) on
the same file stands beside ours when an interpreter has `xprof` (this one, --xprof-python or
$XPROF_PYTHON); otherwise the figures FACTS.md records, marked "published".
"""

from __future__ import annotations

import argparse
import os

from common import SIZES, measure, synthetic_file, table, xprof_python, xprof_trace_viewer

RUN = """
    t0 = time.perf_counter()
    import numpy as np
    import xprof_widgets as xw
    from xprof_widgets.trace import StringTracker, encode_window, trace_index
    profile = xw.open_profile({path!r})
    opened = time.perf_counter()
    index = trace_index(profile)
    built = time.perf_counter()
    strings = StringTracker(profile)
    content, buffers = encode_window(index.window(0.0, profile.duration_us, {width}), strings)
    first = time.perf_counter()
    result = {{"events": profile.n_events, "open_s": opened - t0, "build_s": built - opened,
              "first_s": first - t0, "index_b": index.nbytes / profile.n_events,
              "rss_first": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}

    rng = np.random.default_rng(0)
    total = profile.duration_us
    lo, hi = 0.0, total
    times, sizes = [], []
    for _ in range({steps}):
        span = hi - lo
        if rng.random() < 0.5:  # zoom around a random point, 1/8x .. 8x
            center = lo + rng.random() * span
            span = min(total, max(1e-3, span * 2.0 ** rng.uniform(-3, 3)))
            lo = center - span * rng.random()
        else:  # pan by up to one view
            lo += span * rng.uniform(-1, 1)
        lo = min(max(lo, 0.0), total - span)
        hi = lo + span
        t = time.perf_counter()
        content, buffers = encode_window(index.window(lo, hi, {width}), strings)
        times.append(time.perf_counter() - t)
        sizes.append(sum(b.nbytes for b in buffers) + len(json.dumps(content)))
    ms = np.array(times) * 1e3
    result.update(p50=float(np.percentile(ms, 50)), p95=float(np.percentile(ms, 95)),
                  max=float(ms.max()), max_kb=max(sizes) / 1024)

    for key, pattern, regex in (("search_sub", "fusion", False),
                                ("search_rare", "copy-start.0 ", False),
                                ("search_re", r"all-reduce-(start|done)\\.1\\b", True)):
        t = time.perf_counter()
        hits = index.search(pattern, regex=regex)
        result[key] = (time.perf_counter() - t) * 1e3
        result[key + "_hits"] = hits.n_hits

    t = time.perf_counter()
    window = index.window(lo, hi, {width}, flows=True)
    result["flows_s"] = time.perf_counter() - t
    result["n_edges"] = len(index.flows)
    result["rss_flows"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e6", "5e6"], choices=list(SIZES))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--xprof-python", help="an interpreter with xprof installed")
    parser.add_argument("--no-xprof", action="store_true", help="use the published figures")
    args = parser.parse_args()
    xprof = None if args.no_xprof else xprof_python(args.xprof_python)
    paths = {label: synthetic_file(label) for label in args.sizes}
    # compile and cache every kernel once, outside the timings
    measure(RUN.format(path=str(paths[args.sizes[0]]), width=args.width, steps=3))
    rows = []
    for label in args.sizes:
        load = os.getloadavg()[0]
        r = measure(RUN.format(path=str(paths[label]), width=args.width, steps=args.steps))
        x_s, x_mb, source = xprof_trace_viewer(label, paths[label], xprof)
        rows.append([label, r["events"], r["open_s"], r["build_s"], r["first_s"],
                     r["rss_first"], x_s, x_mb, source, r["index_b"], r["p50"], r["p95"], r["max"], r["max_kb"],
                     r["search_sub"], r["search_sub_hits"], r["search_rare"], r["search_re"],
                     r["flows_s"], r["n_edges"], r["rss_flows"],
                     f"{load:.1f}/{os.getloadavg()[0]:.1f}"])
    print(table(["N", "events", "open s", "index s", "first window s", "peak RSS MB",
                 "XProf first call s", "XProf RSS MB", "XProf figures", "index B/event", "window p50 ms", "p95 ms", "max ms", "max answer KiB",
                 "search 'fusion' ms", "hits", "search rare ms", "search regex ms",
                 "first flows s", "edges", "peak RSS w/ flows MB", "load before/after"],
                rows))
    print(f"{args.steps} pans/zooms at {args.width} px, window + encode per step.")


if __name__ == "__main__":
    main()
