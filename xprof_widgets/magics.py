"""`%xprof` and `%%xprof`: open, profile or capture, then show the tools under the cell.

    %load_ext xprof_widgets
    %xprof LOGDIR [--run R] [--host H] [--tool trace|memory|op|input]
    %%xprof [--logdir DIR] [--tool ...]          # profiles the cell with jax.profiler.trace
    %xprof capture HOST:PORT --duration 2s [--logdir DIR] [--tool ...]
"""

from __future__ import annotations

import argparse
import re
import shlex
import tempfile
from typing import Any

from .errors import ProfileError

TOOLS = {
    "trace": "TraceViewer",
    "memory": "MemoryViewer",
    "op": "OpProfile",
    "input": "InputPipeline",
}


class MagicUsageError(ValueError):
    """A magic line that does not parse; the message carries the usage."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would exit the kernel
        raise MagicUsageError(f"{message}\n{self.format_usage()}")


def _parser(prog: str) -> _Parser:
    parser = _Parser(prog=prog, add_help=False)
    parser.add_argument("--tool", choices=sorted(TOOLS))
    return parser


def _open_parser() -> _Parser:
    parser = _parser("%xprof")
    parser.add_argument("logdir", nargs="?")
    parser.add_argument("--run")
    parser.add_argument("--host")
    return parser


def _capture_parser() -> _Parser:
    parser = _parser("%xprof capture")
    parser.add_argument("address", help="HOST:PORT of jax.profiler.start_server")
    parser.add_argument("--duration", default="2s")
    parser.add_argument("--logdir")
    return parser


def _cell_parser() -> _Parser:
    parser = _parser("%%xprof")
    parser.add_argument("--logdir")
    return parser


def parse_duration_ms(text: str) -> int:
    """'2s', '1.5 s', '500ms', '3000' (milliseconds) -> milliseconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", text)
    if not match:
        raise MagicUsageError(f"--duration {text!r}: expected e.g. 2s, 500ms or 3000")
    value, unit = float(match.group(1)), match.group(2) or "ms"
    return round(value * {"ms": 1, "s": 1000, "m": 60_000}[unit])


def tool_widget(path_or_profile: Any, tool: str | None, **open_args: Any) -> Any:
    """The suite (every tool) or one tool's widget, on a path or an opened profile."""
    import xprof_widgets as xw

    if tool is None:
        return xw.Profiler(path_or_profile, **open_args)
    profile = xw.open_profile(path_or_profile, **open_args)
    return getattr(xw, TOOLS[tool])(profile)


def capture(address: str, duration_ms: int, logdir: str) -> str:
    """Asks a running profiler server (jax.profiler.start_server) for a trace into logdir."""
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError as exc:
        raise ProfileError(
            "capturing from a profiler server needs XProf's gRPC client: pip install xprof "
            "(or xprof_widgets[capture]).") from exc
    options = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 1}
    try:
        _pywrap_profiler_plugin.trace(address, logdir, "", True, duration_ms, 3, options)
    except Exception as exc:  # the binding raises plain exceptions with gRPC's message
        raise ProfileError(f"{address}: no profile captured ({exc}). Is a program running "
                           "jax.profiler.start_server on that port?") from exc
    return logdir


def _load_magics() -> type:
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class XprofMagics(Magics):
        """The `xprof` line and cell magic."""

        last_logdir: str | None = None

        @line_cell_magic
        def xprof(self, line: str, cell: str | None = None) -> None:
            from IPython.display import display

            try:
                widget = self._cell(line, cell) if cell is not None else self._line(line)
            except (MagicUsageError, ProfileError) as exc:
                print(f"%xprof: {exc}")
                return
            display(widget)

        def _line(self, line: str) -> Any:
            words = shlex.split(line)
            if words[:1] == ["capture"]:
                args = _capture_parser().parse_args(words[1:])
                logdir = args.logdir or tempfile.mkdtemp(prefix="xprof_")
                capture(args.address, parse_duration_ms(args.duration), logdir)
                XprofMagics.last_logdir = logdir
                return tool_widget(logdir, args.tool)
            args = _open_parser().parse_args(words)
            logdir = args.logdir or XprofMagics.last_logdir
            if logdir is None:
                raise MagicUsageError("no LOGDIR given and no profile captured yet in this "
                                      "kernel.\n" + _open_parser().format_usage())
            return tool_widget(logdir, args.tool, run=args.run, host=args.host)

        def _cell(self, line: str, cell: str) -> Any:
            import jax

            args = _cell_parser().parse_args(shlex.split(line))
            logdir = args.logdir or tempfile.mkdtemp(prefix="xprof_")
            with jax.profiler.trace(logdir):
                self.shell.run_cell(cell)  # a failing cell still leaves a profile worth a look
            XprofMagics.last_logdir = logdir
            return tool_widget(logdir, args.tool)

    return XprofMagics


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(_load_magics())


def unload_ipython_extension(ipython: Any) -> None:
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("xprof", None)
