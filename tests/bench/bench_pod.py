"""Pod-scale run on a local Dask cluster beside the same run opened in the kernel (a printed
table, never a timed assert).

    python tests/bench/bench_pod.py [--hosts 64] [--events 3.5e5] [--workers 2] [--local-hosts 8]

A synthetic TPU run of `--hosts` hosts, `--events` generated events each (the decoder adds the
framework rows XProf derives: 3.5e5 generated events decode to about 1e6), is opened with
`open_profile(run, client=...)` on a LocalCluster of processes: time to the op profile, the
input pipeline and the overview, the kernel's peak RSS (its scheduler included, as in a
notebook that starts a LocalCluster), the workers' peak RSS, and the window latency of a host
held by a worker (first window with its index build, then pans and zooms at 1600 px), and of
every other host as a busy row. The local path opens the whole run in a fresh kernel when the
memory guard lets it through, else `--local-hosts` hosts (default 8) with its figures scaled to
every host, linearly, as the local path holds every host's columns at once. Each phase runs in a fresh
process (common.measure). The Pod Viewer (xw.PodViewer) is timed when the package has it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from common import CACHE, measure

POD = """
import os, time, resource
import numpy as np
from dask.distributed import Client, LocalCluster
import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import overview

def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

cluster = LocalCluster(n_workers={workers}, threads_per_worker=1, processes=True,
                       memory_limit=0, dashboard_address=None)
client = Client(cluster)
result = {{}}
t0 = time.perf_counter()
pod = xw.open_profile({run!r}, client=client)
result["open_s"] = time.perf_counter() - t0
t = time.perf_counter(); analyze_op_profile(pod).to_dataframe()
result["op_s"] = time.perf_counter() - t
t = time.perf_counter(); analyze_input_pipeline(pod)
result["input_s"] = time.perf_counter() - t
t = time.perf_counter(); overview(pod)
result["overview_s"] = time.perf_counter() - t + result["op_s"] + result["input_s"]
result["to_overview_s"] = time.perf_counter() - t0
if hasattr(xw, "PodViewer"):
    t = time.perf_counter(); xw.PodViewer(pod).to_dataframe()
    result["pod_viewer_s"] = time.perf_counter() - t
host = pod.hosts[len(pod.hosts) // 2]
tv = xw.TraceViewer(pod, hosts=[host])
tracks = tv._source.picked_tracks(tv.hosts).tolist()
end = pod.duration_us
t = time.perf_counter()
content, _ = tv._window(0.0, end, 1600, tracks=tracks, collapsed=[], view="bench")
result["first_window_s"] = time.perf_counter() - t
tv._details(int(pod.frame_of(host).event_base))  # waits for the flows found after a first window
rng = np.random.default_rng(0)
latency = []
for _ in range(200):
    span = end * 10 ** rng.uniform(-4, 0)
    start = rng.uniform(0, end - span)
    t = time.perf_counter()
    tv._window(start, start + span, 1600, tracks=tracks, collapsed=[], view="bench")
    latency.append((time.perf_counter() - t) * 1e3)
result["window_p50_ms"] = float(np.percentile(latency, 50))
result["window_p95_ms"] = float(np.percentile(latency, 95))
rows = [s for s, k in zip(tv._summary["sections"]["id"], tv._summary["sections"]["kind"])
        if k == "pod-host"]
t = time.perf_counter()
tv._window(0.0, end, 1600, tracks=tracks, collapsed=rows, view="bench")
result["all_hosts_window_s"] = time.perf_counter() - t
latency = []
for _ in range(50):
    span = end * 10 ** rng.uniform(-3, 0)
    start = rng.uniform(0, end - span)
    t = time.perf_counter()
    tv._window(start, start + span, 1600, tracks=tracks, collapsed=rows, view="bench")
    latency.append((time.perf_counter() - t) * 1e3)
result["all_hosts_p50_ms"] = float(np.percentile(latency, 50))
result["all_hosts_p95_ms"] = float(np.percentile(latency, 95))
result["events"] = pod.n_events
result["hosts"] = len(pod.hosts)
result["kernel_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
result["worker_peak_mb"] = sorted(client.run(hwm).values())
pod.close()
client.close()
cluster.close()
"""

LOCAL = """
import time
import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import overview
from xprof_widgets.profile.locate import find_runs
result = {{}}
hosts = [f.host for f in find_runs({run!r})[1][-1].hosts]
t0 = time.perf_counter()
profile = xw.open_profile({run!r}, host=hosts[:{n}])
result["open_s"] = time.perf_counter() - t0
t = time.perf_counter(); analyze_op_profile(profile).to_dataframe()
result["op_s"] = time.perf_counter() - t
t = time.perf_counter(); analyze_input_pipeline(profile)
result["input_s"] = time.perf_counter() - t
t = time.perf_counter(); overview(profile)
result["overview_s"] = time.perf_counter() - t + result["op_s"] + result["input_s"]
result["to_overview_s"] = time.perf_counter() - t0
result["events"] = profile.n_events
"""

GUARD = """
import xprof_widgets as xw
from xprof_widgets.profile.locate import find_runs
from xprof_widgets.profile.memory_guard import check_memory, estimate_bytes
result = {{}}
fs, runs = find_runs({run!r})
result["need_mb"] = estimate_bytes(fs, runs[-1].hosts) / 1e6
try:
    check_memory(fs, runs[-1].hosts, {run!r})
    result["guard"] = ""
except xw.ProfileError as exc:
    result["guard"] = str(exc)
"""

BARE = """
import xprof_widgets, numpy, pandas
result = {}
"""


def synthetic_run(hosts: int, events: float) -> Path:
    out = CACHE / f"pod_tpu_{hosts}x{events:g}"
    run = out / "plugins" / "profile" / "2026_01_01_00_00_00"
    if not run.exists() or len(list(run.glob("*.xplane.pb"))) != hosts:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "xprof_widgets.synthetic", str(out), "--events",
                        str(int(events * hosts)), "--kind", "tpu", "--hosts", str(hosts)],
                       check=True, stdout=subprocess.DEVNULL)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--events", type=float, default=3.5e5, help="generated events per host")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--local-hosts", type=int, default=0,
                        help="hosts the local path opens (default: all when the memory guard "
                             "lets the run through, else 8), scaled to every host")
    args = parser.parse_args()
    run = synthetic_run(args.hosts, args.events)
    size = sum(f.stat().st_size for f in run.glob("*.xplane.pb"))
    print(f"run: {args.hosts} hosts, {size / 1e6:.0f} MB of files, {run}", flush=True)
    bare = measure(BARE)["peak_rss_mb"]
    guard = measure(GUARD.format(run=str(run)))
    n_local = args.local_hosts or (args.hosts if not guard["guard"] else 8)
    pod = measure(POD.format(run=str(run), workers=args.workers))
    local = measure(LOCAL.format(run=str(run), n=n_local))
    scale = args.hosts / n_local
    local_rss = bare + (local["peak_rss_mb"] - bare) * scale
    rows = [
        ("events (decoded)", f"{pod['events']:,}", f"{local['events']:,} x {scale:g}"),
        ("open (decode) s", f"{pod['open_s']:.1f}", f"{local['open_s'] * scale:.1f}"),
        ("op profile s", f"{pod['op_s']:.2f}", f"{local['op_s'] * scale:.2f}"),
        ("input pipeline s", f"{pod['input_s']:.2f}", f"{local['input_s'] * scale:.2f}"),
        ("overview (with both) s", f"{pod['overview_s']:.2f}", f"{local['overview_s'] * scale:.2f}"),
        ("open to overview s", f"{pod['to_overview_s']:.1f}", f"{local['to_overview_s'] * scale:.1f}"),
        ("pod viewer s", f"{pod['pod_viewer_s']:.2f}" if "pod_viewer_s" in pod
         else "no xw.PodViewer yet", ""),
        ("kernel peak RSS MB", f"{pod['kernel_peak_mb']:.0f}", f"{local_rss:.0f}"),
        ("worker peak RSS MB", " / ".join(f"{m:.0f}" for m in pod["worker_peak_mb"]), ""),
        ("remote host: first window s (index build)", f"{pod['first_window_s']:.2f}", ""),
        ("remote host: window p50 / p95 ms (1600 px)",
         f"{pod['window_p50_ms']:.1f} / {pod['window_p95_ms']:.1f}", ""),
        ("first window with every other host a row s", f"{pod['all_hosts_window_s']:.2f}", ""),
        ("  then p50 / p95 ms", f"{pod['all_hosts_p50_ms']:.1f} / {pod['all_hosts_p95_ms']:.1f}",
         ""),
    ]
    width = max(len(r[0]) for r in rows)
    local_title = (f"local, all {args.hosts} hosts" if n_local == args.hosts else
                   f"local, {n_local} hosts scaled to {args.hosts}")
    print(f"\n{'':{width}}  {'Dask LocalCluster':>24}  {local_title:>34}")
    for name, a, b in rows:
        print(f"{name:{width}}  {a:>24}  {b:>34}")
    print(f"\nkernel RSS, pod / local: {pod['kernel_peak_mb'] / local_rss:.3f} (bare kernel with "
          f"xprof_widgets, numpy, pandas imported: {bare:.0f} MB)")
    print(f"memory guard on the whole run: needs about {guard['need_mb']:.0f} MB; "
          f"{guard['guard'] or 'it fits this machine now'}")


if __name__ == "__main__":
    main()
