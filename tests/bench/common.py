"""What every benchmark shares: cached synthetic profiles, measured subprocesses, XProf, tables.

Each measurement runs in a fresh Python process so peak RSS (ru_maxrss) and "first call" times
are those of a user's fresh kernel. XProf runs in whichever interpreter has `xprof` installed:
this one, or the one named by `--xprof-python` / $XPROF_PYTHON.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

CACHE = Path(os.environ.get("XPROF_WIDGETS_BENCH_DIR",
                            Path.home() / ".cache" / "xprof_widgets" / "bench"))
SIZES = {"1e6": 1_000_000, "5e6": 5_000_000, "5e7": 50_000_000}

# Measured by hand on this project's 2-core machine (FACTS.md), for when xprof is not installed.
XPROF_PUBLISHED = {
    "1e6": {"trace_viewer@ s": 1.6, "trace_viewer@ MB": 467, "op_profile s": 1.5},
    "5e6": {"trace_viewer@ s": 7.4, "trace_viewer@ MB": 1400, "op_profile s": 7.4},
    "5e7": {"trace_viewer@ s": 107, "trace_viewer@ MB": 9900},
}


def synthetic_file(label: str, kind: str = "tpu") -> Path:
    """A synthetic profile of SIZES[label] events, generated once and cached outside the repo."""
    path = CACHE / f"{kind}_{label}" / "plugins" / "profile" / "2026_01_01_00_00_00" / \
        "host0.xplane.pb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "xprof_widgets.synthetic", str(path), "--events",
                        str(SIZES[label]), "--kind", kind], check=True)
    return path


def measure(code: str, python: str = sys.executable) -> dict:
    """Runs `code` in a fresh interpreter; it must print one JSON dict as its last line.
    Adds the process's peak RSS in MB."""
    wrapper = textwrap.dedent("""
        import json, resource, sys, time
        {code}
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
    """).format(code=textwrap.indent(textwrap.dedent(code), "").strip())
    out = subprocess.run([python, "-c", wrapper], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def xprof_python(explicit: str | None = None) -> str | None:
    """An interpreter that can import xprof, or None."""
    for candidate in (explicit, os.environ.get("XPROF_PYTHON"), sys.executable):
        if candidate and subprocess.run([candidate, "-c", "import xprof.convert"], check=False,
                                        capture_output=True).returncode == 0:
            return candidate
    return None


# What XProf's UI sends on its first trace_viewer@ request (profile_plugin.py defaults).
XPROF_UI_PARAMS = {"trace_viewer_options": {"resolution": 8000, "full_dma": False}}


def xprof_trace_viewer(label: str, path: Path, xprof: str | None) -> tuple[float, float, str]:
    """XProf's first trace_viewer@ call on `path`: (seconds, peak RSS MB, "measured"), or the
    figures FACTS.md records for this size when no interpreter has xprof."""
    if xprof:
        try:
            theirs = xprof_tool(xprof, path, "trace_viewer@", XPROF_UI_PARAMS)
        except subprocess.CalledProcessError as e:  # on a 5e7 file XProf outgrows 24 GiB
            return math.nan, math.nan, f"XProf died: {_death(e.returncode)}"
        return theirs["seconds"], theirs["peak_rss_mb"], "measured"
    published = XPROF_PUBLISHED[label]
    return published["trace_viewer@ s"], published["trace_viewer@ MB"], "published"


def _death(returncode: int) -> str:
    """How a child process ended, in words: a kill by signal (the OOM killer's is SIGKILL)."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return f"{name} (the out-of-memory killer)" if name == "SIGKILL" else name
    return f"exit status {returncode}"


def xprof_tool(python: str, path: Path, tool: str, params: dict | None = None) -> dict:
    """XProf's first call of a tool on a copy of the run (XProf writes caches next to it)."""
    code = f"""
        import shutil, tempfile, pathlib
        from xprof.convert import raw_to_tool_data
        src = pathlib.Path({str(path)!r})
        work = pathlib.Path(tempfile.mkdtemp()) / src.name
        shutil.copyfile(src, work)
        t = time.perf_counter()
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(work)], {tool!r}, {params or {}!r})
        result = {{"seconds": time.perf_counter() - t, "ok": data is not None}}
        shutil.rmtree(work.parent)
    """
    return measure(code, python)


def table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table, so the output pastes into an issue note as it is."""
    cells = [[h for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
             for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "—"
    if isinstance(value, float):
        return f"{value:,.3g}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
