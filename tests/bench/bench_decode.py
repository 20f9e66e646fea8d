"""Decode benchmark: `open_profile` on synthetic TPU profiles, 1 and 2 threads, beside XProf.

    python tests/bench/bench_decode.py [--sizes 1e6 5e6 [5e7]] [--threads 1 2] [--repeat 3]
                                       [--xprof-python PATH]

Prints Markdown tables. The first: per size and thread count (XPROF_WIDGETS_THREADS), seconds to
`open_profile` and then to its track table with the derived rows made (what the tools need, then
what the timeline needs; events/s of the latter; fresh process, compiled scanners already cached on
disk), the seconds of the decode alone (`decode_xspace` on the mapped file, another fresh process)
and its speedup over the median one-thread decode of that size, the user and system CPU seconds and
minor page faults of the open alone (the system time is mostly the kernel handing out fresh pages),
faults per 1,000 events, peak RSS, bytes per event the Profile keeps (a mapped file is the page
cache's, not counted), the seconds from `import xprof_widgets` to the Trace Viewer's first window
(open, index, answer; a fresh process), the seconds to and peak RSS with the Trace Viewer and all
four tools open and answered (bench_cold's sequence), and XProf's first `trace_viewer@` call on the
same file (measured when xprof is installed, else the figures in FACTS.md, marked "published"). A
second table gives, per thread count, the seconds to make the derived rows and their peak memory
per event they read (above the RSS before them: the peak is reset first, so the decode's is not
counted), and the seconds of the Op Profile's and the Input Pipeline's first analysis. A third
splits one decode (on one thread) into its stages, with the bytes numpy and Python allocated at the
decode's peak and kept after it (tracemalloc).
"""

from __future__ import annotations

import argparse
import statistics

from bench_cold import ALL_TOOLS, ASK
from common import measure, synthetic_file, table, xprof_python, xprof_trace_viewer

THREADS = """
import os
os.environ["XPROF_WIDGETS_THREADS"] = {threads!r}
"""
FIRST_WINDOW = THREADS + """
t = time.perf_counter()
import xprof_widgets as xw
{ask}
viewer = xw.TraceViewer({path!r})
first_window(viewer)
result = {{"first_s": time.perf_counter() - t}}
"""

DECODE = """
    import os
    os.environ["XPROF_WIDGETS_THREADS"] = {threads!r}
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    import xprof_widgets as xw
    profile = xw.open_profile({path!r})
    opened = time.perf_counter() - t
    profile.tracks  # makes the derived rows, deferred from the decode
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    host = profile._hosts[0]
    data = host.details._data  # a mapping is the page cache's, not the Profile's
    kept = sum(a.nbytes for a in (profile.start_ps, profile.duration_ps, profile.meta,
                                  profile.depth, host.details._record)) + \
        (len(data) if isinstance(data, bytes) else 0)
    result = {{"seconds": seconds, "opened": opened, "events": profile.n_events, "kept_bytes": kept,
               "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
               "faults": after.ru_minflt - before.ru_minflt}}
"""

STAGES = """
    import os
    os.environ["XPROF_WIDGETS_THREADS"] = {threads!r}
    import tracemalloc
    from xprof_widgets.profile.mapped import map_file
    from xprof_widgets.profile.model import Profile
    from xprof_widgets.profile.xspace import decode_xspace

    def stage(run):
        before = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        value = run()
        after = resource.getrusage(resource.RUSAGE_SELF)
        return value, [time.perf_counter() - t, after.ru_utime - before.ru_utime,
                       after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt]

    data, read = stage(lambda: map_file({path!r}))
    trace, decode = stage(lambda: decode_xspace(data, {path!r}, "host"))
    _, build = stage(lambda: Profile([trace], source={path!r}))
    del trace, _
    result = {{"map": read, "decode": decode, "profile": build}}
    if {traced!r}:  # a second decode, traced: tracemalloc would slow the timed one
        tracemalloc.start()
        trace = decode_xspace(map_file({path!r}), {path!r}, "host")
        kept, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result.update(events=trace.n_events, decode_peak_mb=peak / 1e6,
                      decode_kept_mb=kept / 1e6)
"""

PASSES = """
    import os
    os.environ["XPROF_WIDGETS_THREADS"] = {threads!r}
    import xprof_widgets as xw
    from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
    from xprof_widgets.analysis.op_profile import analyze_op_profile
    profile = xw.open_profile({path!r})
    deferred = profile._hosts[0].deferred
    read = deferred.args[0].decoding.start.shape[0] if deferred is not None else 0

    def status(key):  # bytes, from /proc/self/status (Linux)
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from here: the decode's peak is not theirs
    before = status("VmRSS")
    t = time.perf_counter()
    profile.derive_rows()
    derive = time.perf_counter() - t
    rise = status("VmHWM") - before
    t = time.perf_counter()
    analyze_op_profile(profile)
    ops = time.perf_counter() - t
    t = time.perf_counter()
    analyze_input_pipeline(profile)
    pipeline = time.perf_counter() - t
    result = {{"read": read, "derive": derive, "rise": rise, "ops": ops, "pipeline": pipeline}}
"""


def _into_page_cache(path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e6", "5e6"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1,
                        help="fresh processes per figure, the fastest kept (this VM's first "
                             "touches of memory a process freed cost seconds at random)")
    parser.add_argument("--xprof-python")
    parser.add_argument("--no-xprof", action="store_true", help="use the published figures")
    args = parser.parse_args()
    xprof = None if args.no_xprof else xprof_python(args.xprof_python)
    measure("import xprof_widgets as xw; xw.open_profile({!r}); result = {{}}".format(
        str(synthetic_file("1e6"))))  # compile and cache the scanners once, outside the timings
    rows, stages, passes = [], [], []

    def best(code: str, seconds) -> dict:
        return min((measure(code) for _ in range(args.repeat)), key=seconds)

    for label in args.sizes:
        path = synthetic_file(label)
        x_s, x_mb, source = xprof_trace_viewer(label, path, xprof)
        _into_page_cache(path)  # every row reads the file from memory, as XProf's figures do
        mine = []
        for threads in args.threads:
            ours = best(DECODE.format(path=str(path), threads=str(threads)),
                        lambda r: r["seconds"])
            decode = best(STAGES.format(path=str(path), threads=str(threads), traced=False),
                          lambda r: r["decode"][0])["decode"][0]
            first = best(FIRST_WINDOW.format(path=str(path), threads=str(threads), ask=ASK),
                         lambda r: r["first_s"])
            tools = best(THREADS.format(threads=str(threads)) + ALL_TOOLS.format(
                ask=ASK, path=str(path), pattern="fusion"), lambda r: r["s"])
            mine.append([label, threads, ours["events"], path.stat().st_size / 2**20,
                         ours["opened"], ours["seconds"], decode, ours["user"], ours["sys"],
                         ours["faults"], ours["faults"] / ours["events"] * 1000,
                         ours["events"] / ours["seconds"] / 1e6, ours["peak_rss_mb"],
                         ours["kept_bytes"] / ours["events"], first["first_s"], tools["s"],
                         tools["peak_rss_mb"], x_s, x_mb, source, x_s / ours["seconds"],
                         x_mb / ours["peak_rss_mb"]])
        one = [row[6] for row in mine if row[1] == 1]
        for row in mine:  # the decode's speedup over the median one-thread decode of this size
            row.insert(7, statistics.median(one) / row[6] if one else "")
        rows += mine
        for threads in sorted(set(args.threads)):
            p = best(PASSES.format(path=str(path), threads=str(threads)),
                     lambda r: r["derive"] + r["ops"] + r["pipeline"])
            passes.append([label, threads, p["read"], p["derive"],
                           p["rise"] / p["read"] if p["read"] else "", p["ops"], p["pipeline"]])
        split = measure(STAGES.format(path=str(path), threads="1", traced=True))
        for name in ("map", "decode", "profile"):
            wall, user, system, faults = split[name]
            stages.append([label, name, wall, user, system, faults,
                           faults / split["events"] * 1000,
                           split["decode_peak_mb"] if name == "decode" else "",
                           split["decode_kept_mb"] if name == "decode" else ""])
    print(table(["N", "threads", "events", "file MiB", "open_profile s", "with tracks s",
                 "decode s", "decode vs 1 thread", "user s", "sys s",
                 "minor faults", "faults/1k events", "M events/s", "peak RSS MB",
                 "kept B/event", "first window s", "all tools s", "all tools peak RSS MB",
                 "XProf s", "XProf RSS MB", "XProf figures",
                 "speedup", "RSS ratio"], rows))
    print()
    print(table(["N", "threads", "events the derived rows read", "derived rows s",
                 "their peak B/event read", "Op Profile s", "Input Pipeline s"], passes))
    print()
    print(table(["N", "stage", "wall s", "user s", "sys s", "minor faults", "faults/1k events",
                 "traced peak MB", "traced kept MB"], stages))


if __name__ == "__main__":
    main()
