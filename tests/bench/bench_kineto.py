"""PyTorch (Kineto) traces at 60 MB to 1 GB: ours beside HTA, gunzip speed, 8 ranks on Dask.

    .venv/bin/python tests/bench/bench_kineto.py [--sizes 60M,250M,1G] [--formats plain,gz]
        [--repeat N] [--skip-hta] [--source TRACE] [--decompressors] [--ranks] [--workdir DIR]

The big traces are one real GPU trace (default: HTA's df_index_resolver, 54 MB of JSON, 216k
events of a V100 training step, the largest GPU Kineto trace of the corpus) written K times end
to end, as a long run writes it: each repetition's `ts` shifted by the trace's span, its ids
(`correlation`, `External id`, flow `id`, `Ev Idx`, `Python id`...) by one more than the largest,
so they stay unique and still link; metadata and the profiler's window markers written once.
Each event keeps its source text but for those numbers (exact decimals, Kineto's layout). The
files are made once, repetition by repetition, into --workdir (default: the bench cache, outside
the repo), plain and gzipped (level 6, gzip's default), each alone in its folder for HTA.

Every figure is the fastest of --repeat fresh processes, the file in the page cache, `import`
included (what a user's fresh kernel waits): ours `open_profile`, the Trace Viewer's first window
and Kernel Stats (the peak RSS of that process is issue 29's 2.5 GB budget), then in another
process every tool the registry offers for the trace, answered (per-tool seconds in a second
table); HTA's `TraceAnalysis(trace_dir=...)` in a venv of its own under the cache (made when
missing), its peak RSS counting the pool children it forks for many ranks. "HTA / ours" is HTA's
load over our first window (issue 29 asks for 10 or more at 1 GB).

--decompressors: gunzip throughput (uncompressed MB/s) and peak RSS of zlib, isal, zlib-ng and
rapidgzip (1 and 2 threads) on the ~250 MB trace's .json.gz, in their own venv. --ranks: the
8-rank DLRM run opened locally and on a Dask LocalCluster (2 workers), every offered tool's
table hashed on each side to tell whether they are equal. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from bench_cold import ASK
from common import CACHE, measure, table

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "tests" / "data" / "public"
SHARED = REPO.parent / "shared" / "corpus"
SOURCE = Path("hta") / "df_index_resolver" / "df_index_resolver.json.gz"
RANKS = Path("param") / "dlrm_v100_8rank"
UNITS = {"K": 10**3, "M": 10**6, "G": 10**9}
BETWEEN = re.compile(r"[\s,]*")  # what separates two elements of an array

# Keys whose integer values identify an event or link two (flows, kernels to their launches,
# ops to their Python frames): shifted together so every link survives a repetition.
ID_KEYS = ("id", "correlation", "External id", "Python id", "Python parent id", "Ev Idx",
           "Profiler Event Index", "Sequence number", "Record function id")
NUMBER = re.compile(r'(?<!\\)"(ts|dur|' + "|".join(map(re.escape, ID_KEYS)) +
                    r')"(\s*:\s*)(-?\d+(?:\.\d+)?)')


def corpus_path(relative: Path) -> Path:
    """The file in tests/data/public, else in ../shared/corpus (where new corpus files land
    first)."""
    local = PUBLIC / relative
    return local if local.exists() else SHARED / relative


# --- The big traces -------------------------------------------------------------------------

@dataclass
class Template:
    """A source trace cut for repeating: its events' text and the shifts that keep them apart."""

    head: str  # the text before the first event (header keys, "traceEvents": [)
    body: str  # the repeated events, joined by `sep`
    once: list[tuple[str, dict]]  # metadata and window markers: written once, after the rest
    tail: str  # the text after the last event
    sep: str
    span_us: int  # each repetition's `ts` shift
    end_us: Decimal  # the source's last end: a marker there moves to the last repetition's
    id_step: int  # each repetition's id shift


def _written_once(event: dict) -> bool:
    """Events a long run writes once, not per step: metadata, the profiler's span and its
    global instants (iteration start, window end)."""
    return event.get("ph") == "M" or event.get("cat") == "Trace" or \
        (event.get("ph") == "i" and event.get("s") == "g")


def _events(text: str) -> Iterator[tuple[int, int, dict]]:
    """(start, end, event) of each element of the traceEvents array, in the source's text."""
    decoder = json.JSONDecoder(parse_float=Decimal)  # exact: ts like 1.7e15 + fraction
    found = re.search(r'"traceEvents"\s*:\s*\[', text)
    if found is None:
        raise ValueError("no traceEvents array")
    pos = found.end()
    while True:
        pos = BETWEEN.match(text, pos).end()
        if text[pos] == "]":
            return
        event, end = decoder.raw_decode(text, pos)
        yield pos, end, event
        pos = end


def _largest_id(event: dict) -> int:
    """The largest integer id the event carries, at its top level or in its args."""
    values = [event.get(k) for k in ID_KEYS] + [(event.get("args") or {}).get(k) for k in ID_KEYS]
    return max((v for v in values if isinstance(v, int)), default=0)


def cut(source: Path) -> Template:
    """Reads the source trace once and cuts it into the parts every repetition writes."""
    raw = source.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    body, once, spans = [], [], []
    start = end = None
    id_max = 0
    for lo, hi, event in _events(text):
        spans.append((lo, hi))
        if _written_once(event):
            once.append((text[lo:hi], event))
            continue
        body.append(text[lo:hi])
        id_max = max(id_max, _largest_id(event))
        if "ts" in event:
            ts = Decimal(event["ts"])
            start = ts if start is None else min(start, ts)
            last = ts + Decimal(event.get("dur", 0))
            end = last if end is None else max(end, last)
    sep = text[spans[0][1]:spans[1][0]] if len(spans) > 1 else ",\n"
    return Template(head=text[:spans[0][0]], body=sep.join(body), once=once,
                    tail=text[spans[-1][1]:], sep=sep, span_us=math.ceil(end - start),
                    end_us=end, id_step=id_max + 1)


def _add(number: str, shift: int) -> str:
    """A JSON number's text plus an integer, exactly (its decimals kept as written)."""
    if not shift:
        return number
    return str(int(number) + shift) if "." not in number else str(Decimal(number) + shift)


def shifted(text: str, ts: int, ids: int, dur: int = 0) -> str:
    """Events' text with every `ts`, `dur` and integer id moved by the given amounts."""
    def one(m: re.Match) -> str:
        key, colon, number = m.groups()
        if key == "ts":
            return f'"ts"{colon}{_add(number, ts)}'
        if key == "dur":
            return f'"dur"{colon}{_add(number, dur)}'
        return f'"{key}"{colon}{number if "." in number else _add(number, ids)}'
    return NUMBER.sub(one, text)


def write_repeated(template: Template, times: int, out: Path) -> None:
    """Writes the trace `times` times end to end, one repetition in memory at a time."""
    extra = (times - 1) * template.span_us
    part = out.with_name(out.name + ".part")
    with open(part, "w", buffering=1 << 24) as f:
        f.write(template.head)
        for k in range(times):
            f.write(template.sep if k else "")
            f.write(shifted(template.body, k * template.span_us, k * template.id_step))
        for text, event in template.once:  # the span covers the run; the window ends at its end
            at_end = "ts" in event and Decimal(event["ts"]) >= template.end_us
            f.write(template.sep + shifted(text, extra if at_end else 0, 0,
                                           extra if event.get("cat") == "Trace" else 0))
        f.write(template.tail)
    part.rename(out)


def gzip_file(plain: Path, out: Path) -> None:
    """Compresses as `gzip` does by default (level 6), streaming."""
    part = out.with_name(out.name + ".part")
    with open(plain, "rb") as src, gzip.open(part, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    part.rename(out)


def parse_size(label: str) -> int:
    """'60M' -> 60,000,000 bytes."""
    return int(float(label[:-1]) * UNITS[label[-1].upper()]) if label[-1].isalpha() \
        else int(label)


def big_trace(source: Path, label: str, fmt: str, workdir: Path,
              template: Callable[[], Template]) -> Path:
    """The source repeated to about `label` bytes of JSON, in `fmt` ("plain" or "gz"); made
    once (the template cut only when a file is missing) and reused."""
    stem = source.name.split(".")[0]
    repeats_file = workdir / f"{stem}_{label}.repeats"
    if not repeats_file.exists():
        t = template()
        repeats = max(1, round(parse_size(label) / (len(t.body) + len(t.sep))))
        repeats_file.parent.mkdir(parents=True, exist_ok=True)
        repeats_file.write_text(str(repeats))
    repeats = int(repeats_file.read_text())
    name = f"{stem}_x{repeats}.pt.trace.json"
    plain = workdir / f"{stem}_x{repeats}" / "plain" / name
    if not plain.exists():
        plain.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing {plain} ({repeats} x {source.name})", file=sys.stderr)
        write_repeated(template(), repeats, plain)
    if fmt == "plain":
        return plain
    packed = plain.parent.parent / "gz" / (name + ".gz")
    if not packed.exists():
        packed.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing {packed}", file=sys.stderr)
        gzip_file(plain, packed)
    return packed


# --- Measured processes ---------------------------------------------------------------------

# Answers a tool as its view's first request would: the Trace Viewer's first window, the
# Overview's data, the others' table; returns a hash of what it answered (to compare sides).
ANSWER = ASK + """
import hashlib

def answer(profile, entry):
    widget = getattr(xw, entry.name)(profile)
    if entry.key == "trace":
        first_window(widget)
        return ""
    data = widget.data.to_dict() if entry.key == "overview" else widget.to_dataframe()
    text = str(data) if isinstance(data, dict) else data.to_csv()
    return hashlib.md5(text.encode()).hexdigest()
"""

FIRST = """
t0 = time.perf_counter()
import xprof_widgets as xw
{ask}
profile = xw.open_profile({path!r})
opened = time.perf_counter() - t0
first_window(xw.TraceViewer(profile))
first = time.perf_counter() - t0
kernels = len(xw.KernelStats(profile).to_dataframe())
result = {{"open": opened, "first": first, "kernel_stats": time.perf_counter() - t0,
          "events": profile.n_events, "kernels": kernels}}
"""

ALL_TOOLS = """
t0 = time.perf_counter()
import xprof_widgets as xw
from xprof_widgets.tools import offered
{answer}
{connect}
profile = xw.open_profile({path!r}{client})
opened = time.perf_counter() - t0
tools, hashes = {{}}, {{}}
for entry in offered(profile):
    t = time.perf_counter()
    try:
        hashes[entry.key] = answer(profile, entry)
    except Exception as exc:
        hashes[entry.key] = f"{{type(exc).__name__}}: {{str(exc)[:120]}}"
    tools[entry.key] = time.perf_counter() - t
result = {{"open": opened, "all": time.perf_counter() - t0, "tools": tools, "hashes": hashes}}
{workers}
"""

DASK_CONNECT = """
from dask.distributed import Client, LocalCluster
t = time.perf_counter()
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
client = Client(cluster)
started = time.perf_counter() - t
t0 += started  # the cluster's start is not the open's
"""
DASK_WORKERS = """
result["cluster_s"] = started
def worker_peak():  # VmHWM: a spawned worker's ru_maxrss would count this process's RSS
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM"))
result["workers_rss_mb"] = max(client.run(worker_peak).values())
client.close(); cluster.close()
"""

HTA = """
import logging, warnings
warnings.simplefilter("ignore"); logging.disable(logging.CRITICAL)
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir={folder!r})
result = {{"load": time.perf_counter() - t0,
          "events": sum(len(df) for df in analysis.t.traces.values()),
          "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}}
"""


# The process's own peak (VmHWM): ru_maxrss of a child also counts its parent's RSS at the
# spawn (Linux keeps the larger across exec), and this bench's parent holds a trace it repeats.
PEAK = """
with open("/proc/self/status") as status:
    result["peak_mb"] = next(int(line.split()[1]) / 1024 for line in status
                             if line.startswith("VmHWM"))
"""


def fastest(code: str, key: str, repeat: int, python: str = sys.executable) -> dict:
    """The fastest of `repeat` fresh processes by `key`, with its peak RSS (MB, "peak_mb");
    on failure, {"error": the last line it printed}."""
    try:
        return min((measure(code + PEAK, python) for _ in range(repeat)), key=lambda r: r[key])
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or "").strip().splitlines() or [f"exit status {e.returncode}"]
        return {"error": lines[-1][:160]}


def venv(name: str, packages: list[str], probe: str, workdir: Path) -> str:
    """A venv of the bench's own (made when missing), so that HTA and the decompressors never
    change the packages ours runs with."""
    root = workdir / name
    python = root / "bin" / "python"
    if python.exists() and subprocess.run([python, "-c", f"import {probe}"],
                                          check=False, capture_output=True).returncode == 0:
        return str(python)
    print(f"installing {' '.join(packages)} into {root}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", root], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True,
                   capture_output=True)
    return str(python)


def into_page_cache(path: Path) -> None:
    """Reads the file once, so each side's first run meets it in memory like the rest."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def hta_figures(folder: Path, repeat: int, python: str | None) -> dict:
    """HTA's load of the folder's traces; its peak RSS counts the pool children it forks."""
    if python is None:
        return {"error": "skipped"}
    theirs = fastest(HTA.format(folder=str(folder)), "load", repeat, python)
    if "error" not in theirs:
        theirs["peak"] = max(theirs["peak_mb"], theirs["children_rss_mb"])
    return theirs


def gb(mb: float) -> str:
    return f"{mb / 1024:.2f} GB"


def size_rows(args: argparse.Namespace, hta: str | None) -> tuple[list, list]:
    """One row per size and format: ours (open, first window, Kernel Stats, all tools) and HTA;
    and a second table of each tool's seconds. Every file is made before any is measured, and
    the cut source let go, so the bench's own memory is no one's figure."""
    source = Path(args.source)
    template = functools.cache(lambda: cut(source))
    paths = [(big_trace(source, label, fmt, Path(args.workdir), template), fmt)
             for label in args.sizes.split(",") for fmt in args.formats.split(",")]
    template.cache_clear()
    rows, tools = [], []
    for path, fmt in paths:
        into_page_cache(path)
        first = fastest(FIRST.format(ask=ASK, path=str(path)), "first", args.repeat)
        every = fastest(ALL_TOOLS.format(answer=ANSWER, path=str(path), connect="",
                                         client="", workers=""), "all", args.repeat)
        theirs = hta_figures(path.parent, args.repeat, hta)
        rows.append(size_row(path, fmt, first, every, theirs))
        tools.append((path.name, every.get("tools", {})))
    return rows, tools


def json_size(path: Path) -> str:
    """The trace's JSON bytes, and its file's where it is gzipped."""
    plain = (path.parent.parent / "plain" / path.name.removesuffix(".gz")).stat().st_size
    packed = f" ({path.stat().st_size / 1e6:,.0f} MB gz)" if path.suffix == ".gz" else ""
    return f"{plain / 1e6:,.0f} MB{packed}"


def size_row(path: Path, fmt: str, first: dict, every: dict, theirs: dict) -> list:
    """A row of the main table; a side that failed says why in its cells."""
    row = [path.name.removesuffix(".gz"), json_size(path), fmt]
    if "error" in first:
        row += [first["error"], "", "", "", ""]
    else:
        row += [f"{first['events']:,}", f"{first['open']:.2f}", f"{first['first']:.2f}",
                f"{first['kernel_stats']:.2f}", gb(first["peak_mb"])]
    row += [every["error"]] * 2 if "error" in every else \
        [f"{every['all']:.2f}", gb(every["peak_mb"])]
    if "error" in theirs:
        return row + [theirs["error"], "", "", ""]
    ratio = theirs["load"] / first["first"] if "first" in first else math.nan
    return row + [f"{theirs['load']:.2f}", gb(theirs["peak"]), f"{theirs['events']:,}",
                  f"{ratio:.1f}"]


def tools_table(tools: list[tuple[str, dict]]) -> str:
    """Seconds of each offered tool's first answer, after the open, per trace."""
    keys = list(dict.fromkeys(k for _, seconds in tools for k in seconds))
    return table(["file", *keys], [[name, *(seconds.get(k, math.nan) for k in keys)]
                                   for name, seconds in tools])


# --- Decompressors --------------------------------------------------------------------------

# Each reads the .json.gz in chunks and counts the uncompressed bytes, never holding more than a
# chunk of output (as a scanner fed while the file inflates would).
STREAM = """
import {module} as z
chunk = {mb} << 20
inflate = z.decompressobj(31)  # 16 + 15: a gzip header
n = 0
t = time.perf_counter()
with open({path!r}, "rb") as f:
    while data := f.read(chunk):
        n += len(inflate.decompress(data, chunk))
        while inflate.unconsumed_tail:
            n += len(inflate.decompress(inflate.unconsumed_tail, chunk))
result = {{"seconds": time.perf_counter() - t, "bytes": n}}
"""
FILE_READ = """
import {module} as z
t = time.perf_counter()
n = 0
with {opener} as f:
    while data := f.read({mb} << 20):
        n += len(data)
result = {{"seconds": time.perf_counter() - t, "bytes": n}}
"""


def decompressors(path: str) -> dict[str, str]:
    """The code measured for each decompressor and way of reading, on `path`."""
    def stream(module: str, mb: int) -> str:
        return STREAM.format(module=module, mb=mb, path=path)

    def read(module: str, opener: str) -> str:
        return FILE_READ.format(module=module, opener=opener.format(path=repr(path)), mb=1)

    return {
        "zlib (zlib.decompressobj, 1 MB chunks)": stream("zlib", 1),
        "zlib (zlib.decompressobj, 16 MB chunks)": stream("zlib", 16),
        "zlib (gzip.open, 1 MB reads)": read("gzip", "z.open({path})"),
        "isal (isal_zlib.decompressobj, 1 MB)": stream("isal.isal_zlib", 1),
        "isal (isal_zlib.decompressobj, 16 MB)": stream("isal.isal_zlib", 16),
        "isal (igzip.open, 1 MB reads)": read("isal.igzip", "z.open({path})"),
        "zlib-ng (zlib_ng.decompressobj, 1 MB)": stream("zlib_ng.zlib_ng", 1),
        "zlib-ng (zlib_ng.decompressobj, 16 MB)": stream("zlib_ng.zlib_ng", 16),
        "zlib-ng (gzip_ng.open, 1 MB reads)": read("zlib_ng.gzip_ng", "z.open({path})"),
        "rapidgzip (1 thread, 1 MB reads)": read("rapidgzip",
                                                 "z.open({path}, parallelization=1)"),
        "rapidgzip (2 threads, 1 MB reads)": read("rapidgzip",
                                                  "z.open({path}, parallelization=2)"),
    }


GUNZIP_PACKAGES = ["isal", "zlib-ng", "rapidgzip"]


def decompressor_rows(args: argparse.Namespace) -> list:
    """Uncompressed MB/s and peak RSS of each decompressor on the ~250 MB trace's .json.gz."""
    path = big_trace(Path(args.source), args.gunzip_size, "gz", Path(args.workdir),
                     lambda: cut(Path(args.source)))
    into_page_cache(path)
    python = venv("gunzip-venv", GUNZIP_PACKAGES, "isal, zlib_ng, rapidgzip", Path(args.workdir))
    rows = []
    for name, code in decompressors(str(path)).items():
        r = fastest(code, "seconds", args.repeat, python)
        rows.append([name, r["error"], "", ""] if "error" in r else
                    [name, f"{r['bytes'] / 1e6:,.0f}", f"{r['bytes'] / 1e6 / r['seconds']:,.0f}",
                     f"{r['peak_mb']:,.0f}"])
    return rows


# --- Many ranks -----------------------------------------------------------------------------

def rank_rows(args: argparse.Namespace, hta: str | None) -> list:
    """The 8-rank run opened locally and on a Dask LocalCluster: seconds, peak RSS (the kernel's
    and the workers'), and whether every tool's table is the same on both."""
    folder = corpus_path(RANKS)
    local = fastest(ALL_TOOLS.format(answer=ANSWER, path=str(folder), connect="", client="",
                                     workers=""), "all", args.repeat)
    dask = fastest(ALL_TOOLS.format(answer=ANSWER, path=str(folder), connect=DASK_CONNECT,
                                    client=", client=client", workers=DASK_WORKERS),
                   "all", args.repeat)
    theirs = hta_figures(folder, args.repeat, hta)
    rows = []
    for side, r in (("local", local), ("Dask LocalCluster, 2 workers", dask)):
        if "error" in r:
            rows.append([side, r["error"], "", "", "", "", ""])
            continue
        differ = [k for k, h in r["hashes"].items() if local.get("hashes", {}).get(k) != h]
        failed = [f"{k}: {h}" for k, h in r["hashes"].items() if ":" in h]
        rows.append([side, f"{r['open']:.2f}", f"{r['all']:.2f}", gb(r["peak_mb"]),
                     gb(r["workers_rss_mb"]) if "workers_rss_mb" in r else "",
                     ", ".join(differ) or f"none of {len(r['hashes'])}",
                     "; ".join(failed) or "none"])
    if "error" not in theirs:
        rows.append(["HTA TraceAnalysis", f"{theirs['load']:.2f}", "", gb(theirs["peak"]),
                     "", "", ""])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="60M,250M,1G", help="JSON bytes: 60M,250M,1G")
    parser.add_argument("--formats", default="plain,gz")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes, fastest kept")
    parser.add_argument("--skip-hta", action="store_true")
    parser.add_argument("--hta-package", default="holistictraceanalysis",
                        help="or traceinsight, its newer name")
    parser.add_argument("--source", default=str(corpus_path(SOURCE)), help="the trace repeated")
    parser.add_argument("--workdir", default=str(CACHE / "kineto"))
    parser.add_argument("--decompressors", action="store_true", help="only the gunzip table")
    parser.add_argument("--gunzip-size", default="250M")
    parser.add_argument("--ranks", action="store_true", help="only the 8-rank table")
    args = parser.parse_args()
    hta = None if args.skip_hta or args.decompressors else venv("hta-venv", [args.hta_package], "hta",
                                          Path(args.workdir))
    print(f"Load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the start.\n")
    if args.decompressors:
        print(table(["decompressor", "MB out", "MB/s (uncompressed)", "peak RSS MB"],
                    decompressor_rows(args)))
        return
    if args.ranks:
        print(table(["8 ranks (dlrm_v100_8rank)", "open s", "all tools s", "kernel peak RSS",
                     "workers' peak RSS", "tables differing from local", "tools that failed"],
                    rank_rows(args, hta)))
        return
    rows, tools = size_rows(args, hta)
    print(table(["trace", "size", "format", "ours events", "ours open s", "ours first window s",
                 "+ Kernel Stats s", "ours peak RSS (first window + Kernel Stats)",
                 "ours all tools s", "ours peak RSS (all tools)", "HTA load s", "HTA peak RSS",
                 "HTA rows", "HTA / ours first window"], rows))
    print()
    print(tools_table(tools))


if __name__ == "__main__":
    main()
