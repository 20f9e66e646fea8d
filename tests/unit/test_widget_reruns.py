"""A cell's re-run closes the widgets its previous run displayed (widgets/_reruns.py), in an
IPython shell that runs cells with ids as a notebook's kernel does."""

from __future__ import annotations

import os
import shutil
import weakref
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def shell(tmp_path):
    path = tmp_path / "host.xplane.pb"
    shutil.copyfile(DATA / "jax_cpu_demo.xplane.pb", path)
    shell = InteractiveShell.instance()
    shell.user_ns["path"] = os.fspath(path)
    run(shell, "import xprof_widgets as xw")
    yield shell
    InteractiveShell.clear_instance()


def run(shell, code: str, cell_id: str | None = None) -> None:
    result = shell.run_cell(code, store_history=True, cell_id=cell_id)
    result.raise_error()


def test_a_rerun_closes_the_widget_its_previous_run_displayed(shell):
    run(shell, "tv = xw.TraceViewer(path); tv", cell_id="a")
    old = shell.user_ns["tv"]
    run(shell, "tv = xw.TraceViewer(path); tv", cell_id="a")
    new = shell.user_ns["tv"]
    assert old.comm is None and not hasattr(old, "profile")  # closed, its profile let go
    assert new.comm is not None and new.profile is not None
    run(shell, "suite = xw.Profiler(path); suite", cell_id="b")
    first = shell.user_ns["suite"]
    tab = first.tool("trace")
    run(shell, "suite = xw.Profiler(path); suite", cell_id="b")
    assert first.comm is None and tab.comm is None


def test_a_file_captured_again_leaves_one_profile(shell):
    run(shell, "tv = xw.TraceViewer(path); tv.index; tv", cell_id="a")
    old = weakref.ref(shell.user_ns["tv"].profile)
    stat = os.stat(shell.user_ns["path"])
    os.utime(shell.user_ns["path"], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    run(shell, "tv = xw.TraceViewer(path); tv.index; tv", cell_id="a")
    assert old() is None  # the Out history still holds the old widget, not its profile


def test_widgets_still_named_or_shown_elsewhere_stay_open(shell):
    run(shell, "first = xw.TraceViewer(path); first", cell_id="a")
    run(shell, "second = xw.TraceViewer(path); second", cell_id="a")
    assert shell.user_ns["first"].comm is not None  # a variable names it
    run(shell, "tv = xw.TraceViewer(path); tv", cell_id="c")
    run(shell, "tv", cell_id="d")  # displayed again by another cell
    shown = shell.user_ns.pop("tv")  # and named by no variable now
    run(shell, "tv = xw.TraceViewer(path); tv", cell_id="c")
    assert shown.comm is not None


def test_without_cell_ids_nothing_is_closed(shell):
    run(shell, "tv = xw.TraceViewer(path); tv")
    old = shell.user_ns["tv"]
    run(shell, "tv = xw.TraceViewer(path); tv")
    assert old.comm is not None
