"""`%xprof` / `%%xprof` in a real IPython shell: open, profile a cell, capture from a server."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from xprof_widgets.errors import ProfileError
from xprof_widgets.magics import (
    USAGE,
    MagicUsageError,
    XprofMagics,
    parse_address,
    parse_duration_ms,
    run_files,
    written_run,
)
from xprof_widgets.widgets.trace_viewer import TraceViewer

DATA = Path(__file__).resolve().parents[1] / "data"
OLD_RUN, NEW_RUN = "2026_01_01_00_00_00", "2026_01_02_00_00_00"
LATER_RUN = "9999_12_31_23_59_59"  # sorts after the name of any capture made today

TINY_JIT = """\
import jax, jax.numpy as jnp

@jax.jit
def {name}(x):
    return jnp.tanh(x * 2.0 + 1.0)
"""
TINY_CELL = """\
with jax.profiler.StepTraceAnnotation("{step}", step_num=0):
    out = {name}(jnp.ones(16)).block_until_ready()
"""

SERVER = textwrap.dedent("""\
    import sys, time
    import jax, jax.numpy as jnp

    @jax.jit
    def served_step_fn(x):
        return jnp.tanh(x @ x) * 0.5

    x = served_step_fn(jnp.ones((64, 64))).block_until_ready()  # compiled before the port opens
    jax.profiler.start_server(int(sys.argv[1]))
    if sys.argv[2] == "0":  # idle: not even a Python call to trace
        time.sleep(120)
    deadline = time.monotonic() + 120  # never outlives a test run that lost track of it
    step = 0
    while time.monotonic() < deadline:
        with jax.profiler.StepTraceAnnotation("served", step_num=step):
            x = served_step_fn(x).block_until_ready()
        step += 1
        time.sleep(0.002)
""")


@pytest.fixture(scope="module")
def ip():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


@pytest.fixture
def shell(ip):
    """The shell with the extension loaded (a fresh magic per test), unloaded afterwards."""
    ip.run_line_magic("load_ext", "xprof_widgets")
    yield ip
    ip.run_line_magic("unload_ext", "xprof_widgets")


@pytest.fixture
def shown(monkeypatch):
    """What the magic displays, in order."""
    displayed: list = []
    monkeypatch.setattr("IPython.display.display", displayed.append)
    return displayed


@pytest.fixture
def logdir(make_logdir):
    """Two runs: the TPU fixture (older, host 'tpu') and the JAX CPU demo (newer, host 'cpu')."""
    return make_logdir({OLD_RUN: {"tpu.xplane.pb": DATA / "tpu_v6e_inference.xplane.pb"},
                        NEW_RUN: {"cpu.xplane.pb": DATA / "jax_cpu_demo.xplane.pb"}})


def run(shell, source: str):
    """Runs a cell as the notebook would; the cell must not fail whatever the magic prints."""
    result = shell.run_cell(source)
    assert result.error_before_exec is None and result.error_in_exec is None, result
    return result


def ran(widget, name: str) -> bool:
    """Whether the widget's profile holds an event of that name (a step root: of that name and
    a step number, as XProf names steps).

    A call of a jitted function `f` is a host event `PjitFunction(f)`. (`jit_f(<id>)` is only
    a metadata row carrying the HLO, listed for every program compiled in the process so far,
    so it does not tell what ran during the capture.)"""
    return len(widget.profile.events(name=f"^{re.escape(name)}(?: \\d+)?$")) > 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- parsing ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, ms", [
    ("2s", 2000), ("1.5 s", 1500), ("500ms", 500), ("3000", 3000), ("1m", 60_000),
    (".5s", 500), ("2.s", 2000), (" 10 ms ", 10),
])
def test_duration_parses_to_milliseconds(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "2h", "-1s", "0s", "0.0001", "two seconds", "1e3", "2 s s"])
def test_bad_duration_names_itself_and_the_usage(text):
    with pytest.raises(MagicUsageError) as err:
        parse_duration_ms(text)
    assert repr(text) in str(err.value) and USAGE in str(err.value)


@pytest.mark.parametrize("text, address", [
    ("localhost:9999", "localhost:9999"), ("grpc://10.0.0.2:8466", "10.0.0.2:8466"),
    ("[::1]:9012", "[::1]:9012"), ("worker-0.tpu:8466", "worker-0.tpu:8466"),
])
def test_address_accepts_host_port(text, address):
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["localhost", "9999", "localhost:", "http://h:1", "h:p", "a b:1"])
def test_bad_address_is_a_usage_error(text):
    with pytest.raises(MagicUsageError, match="HOST:PORT"):
        parse_address(text)


# ---- which run a capture wrote ------------------------------------------------------------------
def test_written_run_is_the_new_or_rewritten_one(make_logdir):
    later = LATER_RUN
    logdir = make_logdir({OLD_RUN: {"a.xplane.pb": b"one"}, later: {"a.xplane.pb": b"x"}})
    before = run_files(str(logdir))
    assert written_run(str(logdir), before) == later  # nothing changed: the newest

    new = logdir / "plugins" / "profile" / NEW_RUN
    new.mkdir()
    (new / "a.xplane.pb").write_bytes(b"two")
    assert written_run(str(logdir), before) == NEW_RUN

    # A capture in the same second as the last one rewrites that run.
    before = run_files(str(logdir))
    old = logdir / "plugins" / "profile" / OLD_RUN / "a.xplane.pb"
    old.write_bytes(b"three")
    os.utime(old, ns=(time.time_ns(), time.time_ns() + 1))
    assert written_run(str(logdir), before) == OLD_RUN


def test_written_run_on_an_fsspec_logdir():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    root = f"/xw-magics-{os.getpid()}"
    logdir = f"memory://{root}"
    try:
        fs.pipe(f"{root}/plugins/profile/{OLD_RUN}/a.xplane.pb", b"one")
        fs.pipe(f"{root}/plugins/profile/{LATER_RUN}/a.xplane.pb", b"x")
        before = run_files(logdir)
        time.sleep(0.002)
        fs.pipe(f"{root}/plugins/profile/{OLD_RUN}/a.xplane.pb", b"two")
        assert written_run(logdir, before) == OLD_RUN
    finally:
        fs.rm(root, recursive=True)


def test_written_run_when_nothing_was_written(tmp_path):
    assert run_files(str(tmp_path)) == {}
    with pytest.raises(ProfileError, match="no profile found"):
        written_run(str(tmp_path), {})


# ---- %xprof LOGDIR ------------------------------------------------------------------------------
def test_logdir_opens_the_newest_run(shell, shown, logdir):
    run(shell, f"%xprof {logdir} --tool trace")
    [widget] = shown
    assert isinstance(widget, TraceViewer)
    assert (widget.profile.run, widget.profile.hosts) == (NEW_RUN, ["cpu"])


def test_run_and_host_pick_the_profile(shell, shown, logdir):
    run(shell, f"%xprof {logdir} --run {OLD_RUN} --host tpu --tool trace")
    [widget] = shown
    assert (widget.profile.run, widget.profile.hosts) == (OLD_RUN, ["tpu"])


def test_quoted_logdir_with_spaces(shell, shown, make_logdir, tmp_path):
    spaced = tmp_path / "my logs"
    shutil.move(make_logdir({NEW_RUN: {"cpu.xplane.pb": DATA / "jax_cpu_demo.xplane.pb"}}),
                spaced)
    run(shell, f"%xprof '{spaced}' --tool trace")
    assert shown[0].profile.run == NEW_RUN


def test_without_tool_the_suite_opens_the_logdir(shell, shown, logdir, monkeypatch):
    calls = []
    monkeypatch.setattr("xprof_widgets.widgets.profiler.Profiler",
                        lambda *args, **kwargs: calls.append((args, kwargs)))
    run(shell, f"%xprof {logdir} --run {OLD_RUN} --host tpu")
    assert calls == [((str(logdir),), {"run": OLD_RUN, "host": ["tpu"]})]


def test_without_tool_the_real_suite_shows(shell, shown, logdir):
    run(shell, f"%xprof {logdir}")
    [widget] = shown
    assert type(widget).__name__ == "Profiler" and widget.profile.run == NEW_RUN


def test_bad_path_prints_the_profile_error(shell, shown, tmp_path, capsys):
    missing = tmp_path / "nowhere"
    run(shell, f"%xprof {missing} --tool trace")
    out = capsys.readouterr().out
    assert out.startswith(f"%xprof: {missing}: no such file or directory")
    assert "Traceback" not in out and not shown


@pytest.mark.parametrize("options, message", [
    (f"--run {NEW_RUN}x", "no run '2026_01_02_00_00_00x'"),
    ("--host gpu", "no host ['gpu']; hosts: cpu"),
])
def test_unknown_run_or_host_names_what_exists(shell, shown, logdir, capsys, options, message):
    run(shell, f"%xprof {logdir} {options} --tool trace")
    assert message in capsys.readouterr().out and not shown


def test_no_logdir_before_any_capture_explains(shell, shown, capsys):
    run(shell, "%xprof --tool trace")
    out = capsys.readouterr().out
    assert "no LOGDIR given and no profile captured yet in this kernel" in out
    assert USAGE in out and not shown


@pytest.mark.parametrize("line, message", [
    ("--tool trce", "argument --tool: invalid choice: 'trce'"),
    ("--tol trace", "unrecognized arguments: --tol"),
    ("a b", "unrecognized arguments: b"),
    ("--run", "argument --run: expected one argument"),
    ("'/tmp/unclosed", "No closing quotation"),
    ("capture", "the following arguments are required: address"),
    ("capture localhost", "'localhost': expected HOST:PORT"),
    ("capture localhost:1 --duration 2h", "--duration '2h'"),
    ("capture localhost:1 --run x", "unrecognized arguments: --run x"),
])
def test_usage_errors_print_the_usage_and_keep_the_cell_alive(shell, shown, capsys, line,
                                                               message):
    run(shell, f"%xprof {line}")
    out = capsys.readouterr().out
    assert out.startswith("%xprof: ") and message in out and USAGE in out, out
    assert "Traceback" not in out and not shown


def test_help_prints_the_usage(shell, shown, capsys):
    run(shell, "%xprof --help")
    assert capsys.readouterr().out.strip() == USAGE.strip() and not shown


# ---- %%xprof ------------------------------------------------------------------------------------
def test_cell_is_profiled_and_shown(shell, shown, tmp_path, capsys):
    run(shell, TINY_JIT.format(name="tiny_cell_fn"))
    run(shell, "%%xprof --tool trace --logdir " + str(tmp_path / "logs") + "\n"
        + TINY_CELL.format(step="cell_step", name="tiny_cell_fn"))
    [widget] = shown
    assert ran(widget, "PjitFunction(tiny_cell_fn)") and ran(widget, "cell_step")
    assert shell.user_ns["out"].shape == (16,)  # the cell ran in the user's namespace
    [run_dir] = (tmp_path / "logs" / "plugins" / "profile").iterdir()
    assert widget.profile.run == run_dir.name
    assert f"xprof: profile {run_dir.name} in {tmp_path / 'logs'}" in capsys.readouterr().out

    # No LOGDIR: the profile this kernel captured last.
    run(shell, "%xprof --tool trace")
    assert shown[1].profile.run == run_dir.name and ran(shown[1], "cell_step")


def test_cell_opens_what_it_captured_not_the_newest_name(shell, shown, make_logdir):
    logdir = make_logdir({LATER_RUN: {"cpu.xplane.pb": DATA / "jax_cpu_demo.xplane.pb"}})
    run(shell, TINY_JIT.format(name="first_fn") + TINY_JIT.format(name="second_fn"))
    run(shell, f"%%xprof --tool trace --logdir {logdir}\n"
        + TINY_CELL.format(step="first", name="first_fn"))
    run(shell, f"%%xprof --tool trace --logdir {logdir}\n"
        + TINY_CELL.format(step="second", name="second_fn"))
    first, second = shown
    assert ran(first, "PjitFunction(first_fn)") and ran(first, "first")
    assert first.profile.run != LATER_RUN
    assert ran(second, "PjitFunction(second_fn)") and ran(second, "second")
    assert not ran(second, "PjitFunction(first_fn)") and not ran(second, "first")
    run(shell, "%xprof --tool trace")
    assert shown[2].profile.run == second.profile.run


def test_cell_without_logdir_uses_a_temporary_directory(shell, shown):
    run(shell, TINY_JIT.format(name="temp_fn"))
    run(shell, "%%xprof --tool trace\n" + TINY_CELL.format(step="temp", name="temp_fn"))
    [widget] = shown
    assert ran(widget, "PjitFunction(temp_fn)")
    assert Path(widget.profile.source).name.startswith("xprof_")


def test_cell_without_tool_shows_the_suite_on_its_profile(shell, shown):
    run(shell, TINY_JIT.format(name="suite_fn"))
    run(shell, "%%xprof\n" + TINY_CELL.format(step="suite", name="suite_fn"))
    [widget] = shown
    assert type(widget).__name__ == "Profiler" and ran(widget, "PjitFunction(suite_fn)")


def test_cell_usage_error_does_not_run_the_cell(shell, shown, capsys):
    shell.user_ns.pop("ran", None)
    run(shell, "%%xprof --tool trce\nran = True\n")
    out = capsys.readouterr().out
    assert out.startswith("%%xprof: argument --tool") and USAGE in out
    assert "ran" not in shell.user_ns and not shown


def test_failing_cell_still_shows_its_profile(shell, shown, capsys):
    run(shell, TINY_JIT.format(name="before_error_fn"))
    run(shell, "%%xprof --tool trace\n" + TINY_CELL.format(step="s", name="before_error_fn")
        + "raise KeyError('in the cell')\n")
    out = capsys.readouterr().out
    # The cell's own traceback, as IPython shows it: from the cell's code, not the magic's.
    assert "KeyError" in out and "in the cell" in out and "magics.py" not in out
    [widget] = shown
    assert ran(widget, "PjitFunction(before_error_fn)")


def test_cell_runs_as_ipython_runs_it(shell, shown, capsys, monkeypatch):
    monkeypatch.delenv("XW_MAGICS_TEST", raising=False)
    run(shell, TINY_JIT.format(name="value_fn"))
    run(shell, "%%xprof --tool trace\n%env XW_MAGICS_TEST=on\n"
        + TINY_CELL.format(step="v", name="value_fn") + "out.shape\n")
    assert os.environ["XW_MAGICS_TEST"] == "on"  # a line magic inside the cell ran
    out = capsys.readouterr().out
    assert "Out[" in out and "(16,)" in out and shown  # the last expression is the output


def test_profiled_python_stack_starts_at_the_cell(shell, shown):
    run(shell, TINY_JIT.format(name="stack_fn"))
    run(shell, "%%xprof --tool trace\ndef cell_helper():\n    return stack_fn(jnp.ones(4))\n"
        "cell_helper()\n")
    [widget] = shown
    events = widget.profile.events(name=r"^\$")  # the Python tracer's frames
    assert not events["name"].str.contains(r" (?:run_cell|run_ast_nodes|run_code)$").any()
    helper = events[events["name"].str.endswith(" cell_helper")]
    assert len(helper) == 1 and helper["depth"].iat[0] <= 3, events.head(8)


def test_cell_with_a_syntax_error_is_not_profiled(shell, shown, tmp_path, capsys):
    run(shell, f"%%xprof --tool trace --logdir {tmp_path / 'never'}\nx = (\n")
    assert "SyntaxError" in capsys.readouterr().out
    assert not (tmp_path / "never").exists() and not shown


def test_cell_while_another_trace_runs_explains(shell, shown, tmp_path, capsys):
    import jax

    jax.profiler.start_trace(str(tmp_path / "outer"))
    try:
        run(shell, "%%xprof --tool trace\nran_inside = True\n")
    finally:
        jax.profiler.stop_trace()
    out = capsys.readouterr().out
    assert out.startswith("%%xprof: cannot profile the cell:") and "already" in out
    assert "ran_inside" not in shell.user_ns and not shown


# ---- %xprof capture -----------------------------------------------------------------------------
def serve(tmp_path_factory, busy: bool):
    """A JAX program in a subprocess under jax.profiler.start_server, running jitted steps
    (busy) or sleeping; yields its HOST:PORT once the port is open, kills it afterwards."""
    port = free_port()
    script = tmp_path_factory.mktemp("server") / "serve.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(int(busy))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the profiler server exited:\n{proc.stderr.read().decode()[-3000:]}")
            try:
                socket.create_connection(("localhost", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the profiler server did not open its port in 90 s")
                time.sleep(0.2)
        yield f"localhost:{port}"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve(tmp_path_factory, busy=True)


@pytest.fixture(scope="module")
def idle_server(tmp_path_factory):
    yield from serve(tmp_path_factory, busy=False)


def test_capture_writes_one_run_and_shows_it(shell, shown, server, tmp_path, capsys):
    logdir = tmp_path / "captures"
    run(shell, f"%xprof capture {server} --duration 1s --logdir {logdir} --tool trace")
    out = capsys.readouterr().out
    # XProf's client writes LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>_<port>.xplane.pb
    files = [p.relative_to(logdir) for p in logdir.rglob("*") if p.is_file()]
    host = server.replace(":", "_")
    [file] = files
    assert file.parts[:2] == ("plugins", "profile") and file.name == f"{host}.xplane.pb"
    assert len(file.parts) == 4 and len(file.parts[2].split("_")) == 6, file
    [widget] = shown
    assert (widget.profile.run, widget.profile.hosts) == (file.parts[2], [host])
    assert ran(widget, "PjitFunction(served_step_fn)") and ran(widget, "served")
    assert f"xprof: profile {file.parts[2]} in {logdir}" in out

    # A run whose name sorts later is not what the next capture opens.
    later = logdir / "plugins" / "profile" / LATER_RUN
    later.mkdir()
    shutil.copyfile(DATA / "jax_cpu_demo.xplane.pb", later / "cpu.xplane.pb")
    run(shell, f"%xprof capture grpc://{server} --duration 500ms --logdir {logdir} --tool trace")
    assert shown[1].profile.hosts == [host] and shown[1].profile.run != later.name
    run(shell, "%xprof --tool trace")  # no LOGDIR: that capture again
    assert (shown[2].profile.run, shown[2].profile.hosts) == (shown[1].profile.run, [host])


def test_capture_into_a_temporary_directory(shell, shown, server):
    run(shell, f"%xprof capture {server} --duration 300ms --tool trace")
    [widget] = shown
    assert widget.profile.hosts == [server.replace(":", "_")]
    assert Path(widget.profile.source).name.startswith("xprof_")


def test_capture_with_no_server_explains(shell, shown, tmp_path, capsys):
    address = f"localhost:{free_port()}"
    run(shell, f"%xprof capture {address} --duration 100ms --logdir {tmp_path} --tool trace")
    out = capsys.readouterr().out
    assert out.startswith(f"%xprof: {address}: no profile captured")
    assert "jax.profiler.start_server" in out and not shown


def test_capture_from_an_idle_program_explains(shell, shown, idle_server, tmp_path, capsys):
    run(shell, f"%xprof capture {idle_server} --duration 200ms --logdir {tmp_path} --tool trace")
    out = capsys.readouterr().out
    assert out.startswith(f"%xprof: {idle_server}: no profile captured") and "busy" in out
    assert not shown


def test_capture_without_xprof_says_what_to_install(shell, shown, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "xprof.convert", None)
    run(shell, f"%xprof capture localhost:1 --logdir {tmp_path}")
    assert "pip install xprof" in capsys.readouterr().out and not shown


# ---- %unload_ext --------------------------------------------------------------------------------
def test_unload_removes_the_magic_and_reload_forgets_the_capture(ip, shown, logdir, capsys):
    ip.run_line_magic("load_ext", "xprof_widgets")
    ip.run_line_magic("unload_ext", "xprof_widgets")
    assert ip.find_line_magic("xprof") is None and ip.find_cell_magic("xprof") is None
    assert XprofMagics.__name__ not in ip.magics_manager.registry
    result = ip.run_cell(f"%xprof {logdir}")
    assert result.error_in_exec is not None and not shown  # UsageError: magic not found
    capsys.readouterr()

    ip.run_line_magic("load_ext", "xprof_widgets")
    try:
        magics = ip.magics_manager.registry[XprofMagics.__name__]
        assert magics.last is None
        run(ip, f"%xprof {logdir} --tool trace")
        assert len(shown) == 1
    finally:
        ip.run_line_magic("unload_ext", "xprof_widgets")
