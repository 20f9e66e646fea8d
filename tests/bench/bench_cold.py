"""Cold-start benchmark: how long a user waits for the first picture, ours beside XProf's.

    python tests/bench/bench_cold.py [--repeat 3] [--big] [--xprof-python PY] [--no-xprof]

Every figure comes from a fresh Python process (the median of --repeat runs), in three states:
"bare" (nothing imported: a `python -c` in a new CI job), "new kernel" (a fresh runtime: what a
just-started Jupyter kernel has loaded before the first cell runs, IPython and ipykernel, and
nothing else) and "warm" (numpy and pandas imported too, as in a kernel that has been working).
Our kernels are compiled ahead of time into the wheel, so no run has a compiled-code cache to
fill. Rows:
- each real profile under tests/data: from `import xprof_widgets` to `TraceViewer(path)`'s first
  window (the request the view makes, answered as it is sent), then all four tools (Trace
  Viewer window, Op Profile table + roofline, Memory Viewer charts + view, Input Pipeline
  report, each as its view asks) plus a search; XProf's first trace_viewer@ call, and its
  first trace_viewer@ + op_profile + input_pipeline_analyzer calls in one process (imports not
  counted; each on a fresh copy of the file, so no XProf cache either);
- a synthetic TPU profile of 5e6 events: the first window, beside XProf's first call;
- with --big, 5e7 events (generated once, ~80 s and 1 GB under the bench cache): peak RSS with
  the Trace Viewer and all four tools open, and the Input Pipeline's time;
- `import xprof_widgets`: its time and the heavy packages it imports (none expected).
Each figure is wall seconds with the process's CPU seconds beside it: on a shared machine the
CPU time is what the wall time comes to when nothing else runs (the work is single-threaded).
The machine's load average is printed: take figures when it is low. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import (
    measure,
    synthetic_file,
    table,
    xprof_python,
    xprof_tool,
    xprof_trace_viewer,
)

DATA = Path(__file__).resolve().parents[1] / "data"
STATES = {"bare": "", "new kernel": "import ipykernel.ipkernel\n",
          "warm": "import ipykernel.ipkernel, numpy, pandas\n"}
HEAVY = ("numpy", "pandas", "numba", "llvmlite", "bokeh", "anywidget", "ipywidgets", "IPython",
         "jax", "google.protobuf", "scipy", "matplotlib", "xprof")

# A request as the view sends it, answered as the kernel sends it (chunks captured, not sent).
ASK = """
def ask(widget, method, **params):
    sent = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget._on_custom_message(widget, {"kind": "request", "id": 1, "method": method,
                                       "params": params}, [])
    kinds = {c.get("kind") for c in sent if c.get("id") == 1}
    if kinds != {"response"}:
        raise RuntimeError(f"{method}: {[c for c in sent if c.get('kind') == 'error']}")

def first_window(viewer):
    start, end = viewer.window
    ask(viewer, "window", start_us=start, end_us=end, width_px=1600)
"""

FIRST_WINDOW = """
t0, c0 = time.perf_counter(), time.process_time()
import xprof_widgets as xw
{ask}
viewer = xw.TraceViewer({path!r})
first_window(viewer)
result = {{"s": time.perf_counter() - t0, "cpu": time.process_time() - c0,
          "events": viewer.profile.n_events}}
"""

ALL_TOOLS = """
t0, c0 = time.perf_counter(), time.process_time()
import xprof_widgets as xw
{ask}
profile = xw.open_profile({path!r})
viewer = xw.TraceViewer(profile)
first_window(viewer)
ops = xw.OpProfile(profile)
if ops.analysis is not None:
    ask(ops, "table", **{{name: getattr(ops, name) for name in ("group_by", "sort_by",
        "ops_shown", "top_90", "exclude_idle", "name_filter")}})
    ask(ops, "roofline")
memory = xw.MemoryViewer(profile)
ask(memory, "charts")
ask(memory, "view")
t_ip = time.perf_counter()
pipeline = xw.InputPipeline(profile)
ask(pipeline, "report")
t_ip = time.perf_counter() - t_ip
ask(viewer, "search", pattern={pattern!r})
result = {{"s": time.perf_counter() - t0, "cpu": time.process_time() - c0,
          "input_pipeline_s": t_ip, "events": profile.n_events}}
"""

IMPORT = """
before = set(sys.modules)
t0, c0 = time.perf_counter(), time.process_time()
import xprof_widgets
result = {{"s": time.perf_counter() - t0, "cpu": time.process_time() - c0,
          "heavy": sorted(m for m in {heavy!r} if m in sys.modules and m not in before),
          "modules": len(set(sys.modules) - before)}}
"""

XPROF_THREE = """
import shutil, tempfile, pathlib
from xprof.convert import raw_to_tool_data
src = pathlib.Path({path!r})
total = 0.0
for tool, params in (("trace_viewer@", {ui!r}), ("op_profile", {{"group_by": "program"}}),
                     ("input_pipeline_analyzer", {{}})):
    work = pathlib.Path(tempfile.mkdtemp()) / src.name
    shutil.copyfile(src, work)
    t = time.perf_counter()
    raw_to_tool_data.xspace_to_tool_data([str(work)], tool, params)
    total += time.perf_counter() - t
    shutil.rmtree(work.parent)
result = {{"seconds": total}}
"""


def median_run(code: str, repeat: int, state: str) -> dict:
    """The median of each timing over `repeat` fresh processes."""
    runs = [measure(STATES[state] + code) for _ in range(repeat)]
    best = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            best[key] = statistics.median(r[key] for r in runs)
    return best


def status(ok: bool) -> str:
    return "yes" if ok else "**no**"


def ours(code: str, repeat: int) -> dict[str, dict]:
    """The figure in each state (bare, new kernel, warm)."""
    return {state: median_run(code, repeat, state) for state in STATES}


def row(label: str, events: object, r: dict[str, dict], theirs: object, target: str,
        limit: float | None) -> list:
    """Wall seconds (CPU seconds) per state. Met is judged in the warm state, the one issue 11
    sets its targets in (numpy and pandas imported, no compiled-code cache); the bare and new
    kernel columns add the ~0.4 s of importing numpy, pandas and the widget libraries. Met on
    wall time, or only on CPU time (what an idle machine's wall time comes to) when other work
    on the machine slowed the run."""
    wall = [r[state]["s"] for state in STATES]
    cpu = [r[state]["cpu"] for state in STATES]
    figures = [f"{w:.3g} ({c:.3g})" for w, c in zip(wall, cpu, strict=True)]
    if limit is None:
        met = ""
    elif r["warm"]["s"] <= limit:
        met = "yes"
    else:
        met = "on CPU time" if r["warm"]["cpu"] <= limit else "**no**"
    return [label, events, *figures, theirs, target, met]


UI = {"trace_viewer_options": {"resolution": 8000, "full_dma": False}}


def compile_package() -> None:
    """Byte-compile xprof_widgets as pip does when it installs a wheel: a checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module from source in every run."""
    import importlib.util

    (where,) = importlib.util.find_spec("xprof_widgets").submodule_search_locations
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per figure")
    parser.add_argument("--big", action="store_true", help="add the 5e7-event rows (slow)")
    parser.add_argument("--profiles", nargs="*", help="real profiles (default: tests/data)")
    parser.add_argument("--xprof-python", help="an interpreter with xprof installed")
    parser.add_argument("--no-xprof", action="store_true", help="use the published figures")
    args = parser.parse_args()
    xprof = None if args.no_xprof else xprof_python(args.xprof_python)
    compile_package()
    load_before = os.getloadavg()[0]
    real = [Path(p) for p in args.profiles] if args.profiles else sorted(DATA.glob("*.xplane.pb"))
    rows = []

    imp = ours(IMPORT.format(heavy=HEAVY), args.repeat)
    rows.append(row("`import xprof_widgets`", "", imp, "", "< 0.5 s", 0.5))

    for path in real:
        first = ours(FIRST_WINDOW.format(ask=ASK, path=str(path)), args.repeat)
        events = first["bare"]["events"]
        small = events <= 100_000
        theirs = xprof_tool(xprof, path, "trace_viewer@", UI)["seconds"] if xprof else "n/a"
        rows.append(row(f"{path.name}: `TraceViewer` first window", events, first, theirs,
                        "<= 0.5 s" if small else "", 0.5 if small else None))
        tools = ours(ALL_TOOLS.format(ask=ASK, path=str(path), pattern="fusion"), args.repeat)
        theirs = (f"{measure(XPROF_THREE.format(path=str(path), ui=UI), xprof)['seconds']:.3g}"
                  " (trace + op profile + input pipeline)") if xprof else "n/a"
        rows.append(row(f"{path.name}: all four tools + a search", events, tools, theirs,
                        "<= 1 s" if small else "", 1.0 if small else None))

    path = synthetic_file("5e6")
    first = ours(FIRST_WINDOW.format(ask=ASK, path=str(path)), args.repeat)
    theirs, _, source = xprof_trace_viewer("5e6", path, xprof)
    rows.append(row("synthetic TPU, 5e6 events: first window", first["bare"]["events"], first,
                    f"{theirs:.3g} ({source})", f"<= {theirs / 4:.3g} s (1/4)", theirs / 4))

    if args.big:
        path = synthetic_file("5e7")
        big = measure(STATES["warm"] + ALL_TOOLS.format(ask=ASK, path=str(path),
                                                       pattern="fusion"))
        gb = big["peak_rss_mb"] / 1024
        label = "synthetic TPU, 5e7 events: peak RSS GB, TraceViewer + all four tools open (warm)"
        rows.append([label, big["events"], "", "", gb,
                     "9.9 (trace_viewer@ alone, published)", "<= 3.5 GB", status(gb <= 3.5)])
        rows.append(["synthetic TPU, 5e7 events: InputPipeline s (open + report, warm)",
                     big["events"], "", "", big["input_pipeline_s"], "", "<= 3 s",
                     status(big["input_pipeline_s"] <= 3.0)])

    print(table(["profile", "events", *[f"ours, {state}: s (CPU s)" for state in STATES],
                 "XProf 2.24 first call s", "target", "met (warm)"], rows))
    print(f"\nMedian of {args.repeat} fresh processes per figure; Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_before:.1f} "
          f"before / {os.getloadavg()[0]:.1f} after. `import xprof_widgets` adds "
          f"{imp['bare']['modules']} modules; heavy ones among them: "
          f"{', '.join(imp['bare']['heavy']) or 'none'}.")


if __name__ == "__main__":
    main()
