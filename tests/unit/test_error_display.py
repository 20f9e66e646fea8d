"""A ProfileError in a notebook is one short message: no frames of ours before it."""

from __future__ import annotations

import contextlib
import io

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import xprof_widgets as xw


@pytest.fixture(scope="module")
def shell():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)  # the one shell test_magics.py uses too


def test_a_bad_path_prints_only_the_message(shell, tmp_path):
    missing = tmp_path / "nowhere"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        result = shell.run_cell(f"import xprof_widgets as xw\nxw.open_profile({str(missing)!r})")
    printed = out.getvalue().strip()
    assert isinstance(result.error_in_exec, xw.ProfileError)
    assert printed == f"ProfileError: {result.error_in_exec}"
    assert printed.startswith(f"ProfileError: {missing}: no such file")
    assert "Traceback" not in printed and "File " not in printed
    assert result.error_in_exec.__traceback__ is not None  # %tb still has the frames
