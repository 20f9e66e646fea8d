"""Profile.sql benchmark: a grouped aggregate over every slice, and a few other queries.

    python tests/bench/bench_sql.py [--sizes 1e6 5e6] [--big] [--repeat 5]

Each size runs in a fresh process on the cached synthetic TPU profile (tests/bench/common.py;
--big adds 5e7, about 1 GB on disk and several GB of memory). Columns: the profile's events,
seconds to open it, the first query (DuckDB connection, views, the per-event name codes it
derives), then the best of --repeat runs of each query; the derived columns' bytes per event;
peak RSS. The machine's load average is printed beside: take figures when it is low. Nothing
is asserted: a benchmark reports.
"""

from __future__ import annotations

import argparse
import os

from common import SIZES, measure, synthetic_file, table

QUERIES = {
    "group by name": "SELECT name, count(*), sum(dur) FROM slice GROUP BY name",
    "per track": "SELECT t.name, count(*) AS n, max(s.dur) AS longest FROM slice s "
                 "JOIN track t ON s.track_id = t.id GROUP BY t.name",
    "top 10 fusions": "SELECT id, ts, dur, name FROM slice WHERE category LIKE '%fusion%' "
                      "ORDER BY dur DESC LIMIT 10",
}

RUN = """
    t0 = time.perf_counter()
    import xprof_widgets as xw
    profile = xw.open_profile({path!r})
    opened = time.perf_counter()
    profile.sql({first!r})
    first = time.perf_counter()
    result = {{"events": profile.n_events, "open_s": opened - t0, "first_s": first - opened}}
    for key, query in {queries!r}.items():
        best = float("inf")
        for _ in range({repeat}):
            t = time.perf_counter()
            profile.sql(query)
            best = min(best, time.perf_counter() - t)
        result[key] = best
    session = profile.memo(("sql",), None)
    derived = [c for c in session.columns if c not in ("start_ps", "duration_ps", "depth", "meta")]
    nbytes = sum(getattr(session.columns[c], "codes", session.columns[c]).nbytes for c in derived)
    result["derived_b"] = nbytes / profile.n_events
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e6", "5e6"], choices=["1e6", "5e6"])
    parser.add_argument("--big", action="store_true", help="also 5e7 (about 1 GB on disk)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    labels = args.sizes + (["5e7"] if args.big else [])
    rows = []
    for label in labels:
        path = synthetic_file(label)
        load = os.getloadavg()[0]
        r = measure(RUN.format(path=str(path), first=QUERIES["group by name"],
                               queries=QUERIES, repeat=args.repeat))
        rows.append([label, r["events"], r["open_s"], r["first_s"],
                     *[r[key] for key in QUERIES], r["derived_b"], r["peak_rss_mb"],
                     f"{load:.1f}/{os.getloadavg()[0]:.1f}"])
    print(table(["N", "events", "open s", "first query s", *[f"{k} s" for k in QUERIES],
                 "derived B/event", "peak RSS MB", "load before/after"], rows))
    print(f"Best of {args.repeat} runs per query, after the first; "
          f"group by name: {QUERIES['group by name']}")
    print(f"Sizes: {', '.join(f'{k} = {SIZES[k]:,} generated events' for k in labels)}.")


if __name__ == "__main__":
    main()
