"""The public corpus (tests/data/public), file by file: what opens, what it holds, how fast.

    python tests/bench/bench_corpus.py [--xprof-python PY] [--no-xprof]

Per file: its size; the slice events we draw (derived rows aside) beside a brute-force recount
of the file itself (tests/differential/recount.py: exact-decimal JSON, upb for xplanes); the
tools of the registry that answer it with data (the rest say why they have none); the wall
seconds from a fresh `python -c` to the opened profile (import included); and, for xplanes,
XProf's first trace_viewer@ call on a fresh copy. Files that are not traces show what the
refusal says. Nothing here asserts; the conformance test (test_public_corpus.py) does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import measure, table, xprof_python, xprof_trace_viewer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))
from recount import our_rows, recount_chrome, recount_xspace

import xprof_widgets as xw
from xprof_widgets.tools import TOOLS

PUBLIC = HERE.parent / "data" / "public"
OPEN = """
import time
t = time.perf_counter()
import xprof_widgets as xw
p = xw.open_profile({path!r})
result = {{"seconds": time.perf_counter() - t}}
"""


def tools_answering(profile: xw.Profile) -> list[str]:
    answered = []
    for entry in TOOLS:
        try:
            widget = getattr(xw, entry.name)(profile)
            if entry.name == "TraceViewer":
                widget.window_data(0.0, profile.duration_us, 1600)
            elif entry.name == "Overview":
                widget.data.to_dict()
            elif not len(widget.to_dataframe()):
                continue
        except xw.ProfileError:
            continue
        answered.append(entry.key)
    return answered


def row(path: Path, xprof: str | None) -> list:
    name = str(path.relative_to(PUBLIC))
    size = f"{path.stat().st_size / 1e6:.2f} MB"
    try:
        profile = xw.open_profile(path)
    except xw.ProfileError as refused:
        return [name, size, "refused", "", str(refused).split(": ", 1)[1][:60], "", ""]
    data = path.read_bytes()
    recount = recount_xspace(data) if path.name.endswith(".xplane.pb") else recount_chrome(data)
    ours = sum(sum(not made for *_, made in events) for events in our_rows(profile).values())
    reference = sum(len(events) for events in recount.values())
    seconds = measure(OPEN.format(path=str(path)))["seconds"]
    theirs = ""
    if xprof and path.name.endswith(".xplane.pb"):
        theirs = f"{xprof_trace_viewer(name, path, xprof)[0]:.2f}"
    answered = tools_answering(profile)
    return [name, size, f"{ours:,} / {reference:,}", f"{len(answered)}/{len(TOOLS)}",
            ", ".join(answered), f"{seconds:.2f}", theirs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xprof-python", default=None)
    parser.add_argument("--no-xprof", action="store_true")
    args = parser.parse_args()
    xprof = None if args.no_xprof else xprof_python(args.xprof_python)
    files = sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name != "README.md")
    rows = [row(path, xprof) for path in files]
    print(table(["file", "size", "events (ours / file)", "tools", "answering", "open s (fresh)",
                 "XProf s"], rows))


if __name__ == "__main__":
    main()
