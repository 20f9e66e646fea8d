"""`%xprof` and `%%xprof`: open, profile or capture, then show the tools under the cell.

    %load_ext xprof_widgets
    %xprof [LOGDIR] [--run R] [--host H] [--tool KEY]   # a key of xprof_widgets.tools
    %xprof LOGDIR --dask ADDRESS                 # hosts decoded on a Dask cluster
    %%xprof [--logdir DIR] [--tool ...]          # profiles the cell with jax.profiler.trace
    %xprof capture HOST:PORT [--duration 2s] [--logdir DIR] [--tool ...]
    %xprof diff BEFORE AFTER [--run-before R] [--run-after R]   # xw.compare

A typo in the magic's arguments or a path that holds no profile prints a message with the usage
instead of a traceback: the magic sits at the top of a cell someone is iterating on.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import tempfile
from importlib import import_module
from types import CodeType
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from . import tools as registry
from .errors import ProfileError
from .profile.locate import FileSystem, RunFiles, find_runs

TOOLS = {t.key: t.name for t in registry.TOOLS}

USAGE = f"""\
usage:
  %xprof [LOGDIR] [--run RUN] [--host HOST] [--tool {{{','.join(sorted(TOOLS))}}}]
      show a profile (default: the newest run under LOGDIR; without LOGDIR, the last one
      captured in this kernel by %%xprof or %xprof capture)
  %xprof LOGDIR --dask ADDRESS [--run RUN] [--host HOST] [--tool ...]
      decode every host on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786):
      the kernel holds only tables (docs/pod.md)
  %%xprof [--logdir DIR] [--tool ...]
      run the cell under jax.profiler.trace (into a temporary directory unless DIR is given)
      and show what it captured
  %xprof capture HOST:PORT [--duration 2s] [--logdir DIR] [--tool ...]
      capture from a program running jax.profiler.start_server(PORT) and show it
  %xprof diff BEFORE AFTER [--run-before RUN] [--run-after RUN]
      compare two profiles (logdirs, run directories or files): steps, ops, memory and two
      aligned Trace Viewers (xw.compare)
  Without --tool, the suite of every tool is shown."""

CAPTURE_OPTIONS = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 1}
"""XProf's capture defaults, with the Python tracer on as in jax.profiler.trace, so a capture
shows the same kinds of events as a %%xprof cell."""


class MagicUsageError(ValueError):
    """A magic line that does not parse; the message carries the usage."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would exit the kernel
        raise MagicUsageError(f"{message}\n{USAGE}")


def _parser(prog: str) -> _Parser:
    parser = _Parser(prog=prog, add_help=False, allow_abbrev=False)
    parser.add_argument("--tool", choices=sorted(TOOLS))
    return parser


def _open_parser() -> _Parser:
    parser = _parser("%xprof")
    parser.add_argument("logdir", nargs="?")
    parser.add_argument("--run")
    parser.add_argument("--host", action="append")
    parser.add_argument("--dask")
    return parser


def _capture_parser() -> _Parser:
    parser = _parser("%xprof capture")
    parser.add_argument("address")
    parser.add_argument("--duration", default="2s")
    parser.add_argument("--logdir")
    return parser


def _diff_parser() -> _Parser:
    parser = _Parser(prog="%xprof diff", add_help=False, allow_abbrev=False)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--run-before")
    parser.add_argument("--run-after")
    return parser


def _cell_parser() -> _Parser:
    parser = _parser("%%xprof")
    parser.add_argument("--logdir")
    return parser


def split_line(line: str) -> list[str]:
    """The magic's words, shell-quoted paths kept whole."""
    try:
        return shlex.split(line)
    except ValueError as exc:  # an unclosed quote
        raise MagicUsageError(f"{exc}: {line!r}\n{USAGE}") from exc


def parse_duration_ms(text: str) -> int:
    """'2s', '1.5 s', '500ms', '1m', '3000' (milliseconds) -> milliseconds, at least 1."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m)?\s*", text)
    ms = 0
    if match:
        value, unit = float(match.group(1)), match.group(2) or "ms"
        ms = round(value * {"ms": 1, "s": 1000, "m": 60_000}[unit])
    if ms < 1:
        raise MagicUsageError(f"--duration {text!r}: expected a positive time such as 2s, 500ms "
                              f"or 3000 (milliseconds).\n{USAGE}")
    return ms


def parse_address(text: str) -> str:
    """'HOST:PORT' (also 'grpc://HOST:PORT', '[::1]:PORT') -> 'HOST:PORT' for the gRPC client."""
    address = text.removeprefix("grpc://")
    if not re.fullmatch(r"[^\s/:]+:\d{1,5}|\[[0-9a-fA-F:.]+\]:\d{1,5}", address):
        raise MagicUsageError(f"{text!r}: expected HOST:PORT of a program that called "
                              f"jax.profiler.start_server(PORT), e.g. localhost:9999.\n{USAGE}")
    return address


Snapshot = dict[str, dict[str, tuple]]
"""Run name -> {profile file -> (size, modification time)}."""


def run_files(logdir: str) -> Snapshot:
    """The profile files of each run under logdir, stamped; empty where there is none yet."""
    try:
        return _snapshot(*find_runs(logdir))
    except ProfileError:
        return {}


def written_run(logdir: str, before: Snapshot) -> str:
    """The run a capture just wrote into logdir: the newest run with new or rewritten files.

    Runs are named by capture time to the second, so a capture within the same second as the
    previous one rewrites that run's files instead of adding a run; a run whose name sorts later
    (another naming scheme) is never taken for it.
    """
    after = _snapshot(*find_runs(logdir))  # a ProfileError here says the capture wrote nothing
    changed = [run for run, files in after.items() if before.get(run) != files]
    return (changed or list(after))[-1]


def _snapshot(fs: FileSystem, runs: list[RunFiles]) -> Snapshot:
    return {r.run or "": {h.path: _stamp(fs, h.path) for h in r.hosts} for r in runs}


def _stamp(fs: FileSystem, path: str) -> tuple:
    if fs.remote:
        info = fs.fs.info(path)
        return info.get("size"), str(next((info[k] for k in _MTIME_KEYS if k in info), ""))
    stat = os.stat(fs.strip(path))
    return stat.st_size, stat.st_mtime_ns


_MTIME_KEYS = ("mtime", "updated", "LastModified", "last_modified", "generation", "created")
"""Where fsspec filesystems keep a file's modification time (local, GCS, S3, Azure, memory)."""


def tool_widget(logdir: str, tool: str | None, run: str | None = None,
                host: str | list[str] | None = None, client: Any = None) -> Any:
    """The suite (every tool, with pickers over the logdir's runs) or one tool's widget; with a
    Dask `client`, on a PodProfile whose hosts stay on the cluster."""
    from .opening import open_profile
    from .widgets import profiler

    if client is not None:
        profile = open_profile(logdir, run=run, host=host, client=client)
        return profiler.Profiler(profile) if tool is None else _widget(tool)(profile)
    if tool is None:
        return profiler.Profiler(logdir, run=run, host=host)
    return _widget(tool)(open_profile(logdir, run=run, host=host))


def _widget(key: str) -> Any:
    """The widget class of a tool, loaded as `xw.<Name>` loads it (the registry names it)."""
    entry = registry.tool(key)
    return getattr(import_module(entry.module, __package__), entry.name)


def dask_client(address: str, timeout_s: float = 10.0) -> Any:
    """A client of the Dask scheduler at `address`, with the failure said in words."""
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise ProfileError("--dask needs Dask: pip install 'xprof_widgets[dask]' (or "
                           "'dask[distributed]'), then restart the kernel.") from exc
    try:
        return Client(address, timeout=timeout_s)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ProfileError(f"--dask {address}: no Dask scheduler answers there ({exc}). Start "
                           "one (dask scheduler, dask-kubernetes, dask-gateway; see docs/pod.md) "
                           "and pass its address, e.g. tcp://10.0.0.2:8786.") from exc


def capture(address: str, duration_ms: int, logdir: str) -> str:
    """Asks a running profiler server (jax.profiler.start_server) for a trace into logdir.

    Returns the name of the run it wrote, under logdir/plugins/profile/.
    """
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError as exc:
        raise ProfileError(
            "capturing from a profiler server needs XProf's gRPC client: pip install xprof "
            "(or xprof_widgets[capture]).") from exc
    before = run_files(logdir)
    try:
        _pywrap_profiler_plugin.trace(address, logdir, "", True, duration_ms, 3, CAPTURE_OPTIONS)
    except Exception as exc:  # the binding raises RuntimeError with gRPC's message
        raise ProfileError(f"{address}: no profile captured ({exc}). Is a program running "
                           "jax.profiler.start_server on that port, and busy while the "
                           "capture lasts?") from exc
    return written_run(logdir, before)


@magics_class
class XprofMagics(Magics):
    """The `xprof` line and cell magic; remembers the last profile captured in this kernel."""

    def __init__(self, shell: Any):
        super().__init__(shell)
        self.last: tuple[str, str] | None = None  # (logdir, run)
        self.clients: dict[str, Any] = {}  # Dask clients by scheduler address (--dask)

    @line_cell_magic
    def xprof(self, line: str, cell: str | None = None) -> None:
        """Show XProf's tools on a profile: open one, profile the cell, or capture one.

        Run `%xprof --help` for the usage.
        """
        from IPython.display import display

        try:
            widget = self._cell(line, cell) if cell is not None else self._line(line)
        except (MagicUsageError, ProfileError) as exc:
            print(f"{'%%' if cell is not None else '%'}xprof: {exc}")
            return
        if widget is not None:
            display(widget)

    def _line(self, line: str) -> Any:
        words = split_line(line)
        if {"-h", "--help"} & set(words):
            print(USAGE)
            return None
        if words[:1] == ["capture"]:
            args = _capture_parser().parse_args(words[1:])
            address, duration_ms = parse_address(args.address), parse_duration_ms(args.duration)
            logdir = args.logdir or tempfile.mkdtemp(prefix="xprof_")
            return self._show_new(logdir, capture(address, duration_ms, logdir), args.tool)
        if words[:1] == ["diff"]:
            args = _diff_parser().parse_args(words[1:])
            from .widgets.compare import compare

            return compare(args.before, args.after, run_before=args.run_before,
                           run_after=args.run_after)
        args = _open_parser().parse_args(words)
        if args.dask is not None:
            if args.logdir is None:
                raise MagicUsageError(f"--dask needs a LOGDIR the workers can read.\n{USAGE}")
            if args.dask not in self.clients:
                self.clients[args.dask] = dask_client(args.dask)
            return tool_widget(args.logdir, args.tool, run=args.run, host=args.host,
                               client=self.clients[args.dask])
        if args.logdir is not None:
            return tool_widget(args.logdir, args.tool, run=args.run, host=args.host)
        if self.last is None:
            raise MagicUsageError(f"no LOGDIR given and no profile captured yet in this kernel.\n"
                                  f"{USAGE}")
        logdir, run = self.last
        return tool_widget(logdir, args.tool, run=args.run or run, host=args.host)

    def _cell(self, line: str, cell: str) -> Any:
        words = split_line(line)
        if {"-h", "--help"} & set(words):
            print(USAGE)
            return None
        args = _cell_parser().parse_args(words)
        try:
            import jax
        except ImportError as exc:
            raise ProfileError("%%xprof profiles the cell with jax.profiler.trace: "
                               "pip install jax.") from exc
        code = self._compile(cell)
        if code is None:
            return None
        logdir = args.logdir or tempfile.mkdtemp(prefix="xprof_")
        before = run_files(logdir)
        try:
            jax.profiler.start_trace(logdir)
        except RuntimeError as exc:  # another trace is running in this process
            raise ProfileError(f"cannot profile the cell: {exc}") from exc
        try:
            self._run(*code)  # a failing cell still leaves a profile worth a look
        finally:
            jax.profiler.stop_trace()
        return self._show_new(logdir, written_run(logdir, before), args.tool)

    def _compile(self, cell: str) -> tuple[CodeType, CodeType | None] | None:
        """The cell as IPython would run it (magics, `!` lines), its last expression apart so
        its value shows as the cell's output; None after showing a syntax error."""
        shell = self.shell
        source = shell.transform_cell(cell)
        name = shell.compile.cache(source, shell.execution_count, raw_code=cell)
        try:
            tree = shell.transform_ast(shell.compile.ast_parse(source, filename=name))
        except SyntaxError:
            shell.showsyntaxerror(filename=name)
            return None
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = shell.compile(tree, name, "exec")
        return body, shell.compile(ast.Interactive([last]), name, "single") if last else None

    def _run(self, body: CodeType, last: CodeType | None) -> None:
        """Runs the cell's code in the user's namespace. Executed here rather than by
        `shell.run_cell` so the profile's Python stack starts at the cell's code, not under a
        dozen of IPython's own frames."""
        shell = self.shell
        try:
            for code in (body, last) if last else (body,):
                exec(code, shell.user_global_ns, shell.user_ns)  # noqa: S102 (the user's cell)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 (shown as IPython shows it)
            tb = exc.__traceback__.tb_next  # from the cell's code on
            shell.showtraceback((type(exc), exc, tb), running_compiled_code=True)

    def _show_new(self, logdir: str, run: str, tool: str | None) -> Any:
        self.last = (logdir, run)
        print(f"xprof: profile {run} in {logdir}")
        return tool_widget(logdir, tool, run=run)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(XprofMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """Removes the magic and forgets the last capture; profiles on disk stay."""
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        magic = manager.magics[kind].get("xprof")
        if isinstance(getattr(magic, "__self__", None), XprofMagics):
            del manager.magics[kind]["xprof"]
    manager.registry.pop(XprofMagics.__name__, None)
