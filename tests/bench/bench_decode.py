"""Decode benchmark: `open_profile` on synthetic TPU profiles, beside XProf's first trace_viewer@.

    python tests/bench/bench_decode.py [--sizes 1e6 5e6 [5e7]] [--xprof-python PATH]

Prints one Markdown table: seconds and events/s to a decoded Profile (fresh process, compiled
scanners already cached on disk), peak RSS, bytes per event the Profile keeps, and XProf's
first `trace_viewer@` call on the same file (measured when xprof is installed, else the figures
in FACTS.md, marked "published").
"""

from __future__ import annotations

import argparse

from common import measure, synthetic_file, table, xprof_python, xprof_trace_viewer

DECODE = """
    t = time.perf_counter()
    import xprof_widgets as xw
    profile = xw.open_profile({path!r})
    seconds = time.perf_counter() - t
    host = profile._hosts[0]
    kept = sum(a.nbytes for a in (profile.start_ps, profile.duration_ps, profile.meta,
                                  profile.depth, host.details._record)) + len(host.details._data)
    result = {{"seconds": seconds, "events": profile.n_events, "kept_bytes": kept}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e6", "5e6"])
    parser.add_argument("--xprof-python")
    parser.add_argument("--no-xprof", action="store_true", help="use the published figures")
    args = parser.parse_args()
    xprof = None if args.no_xprof else xprof_python(args.xprof_python)
    measure("import xprof_widgets as xw; xw.open_profile({!r}); result = {{}}".format(
        str(synthetic_file("1e6"))))  # compile and cache the scanners once, outside the timings
    rows = []
    for label in args.sizes:
        path = synthetic_file(label)
        ours = measure(DECODE.format(path=str(path)))
        x_s, x_mb, source = xprof_trace_viewer(label, path, xprof)
        rows.append([label, ours["events"], path.stat().st_size / 2**20, ours["seconds"],
                     ours["events"] / ours["seconds"] / 1e6, ours["peak_rss_mb"],
                     ours["kept_bytes"] / ours["events"], x_s, x_mb, source,
                     x_s / ours["seconds"], x_mb / ours["peak_rss_mb"]])
    print(table(["N", "events", "file MiB", "open s", "M events/s", "peak RSS MB",
                 "kept B/event", "XProf s", "XProf RSS MB", "XProf figures", "speedup",
                 "RSS ratio"], rows))


if __name__ == "__main__":
    main()
