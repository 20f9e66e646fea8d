"""`make test` refuses to run without the references the tests compare with (tests/conftest.py):
one message names each missing one and how to install it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("suite_conftest",
                                               Path(__file__).parents[1] / "conftest.py")
gate = importlib.util.module_from_spec(_SPEC)  # the suite's own conftest, whose gate this tests
_SPEC.loader.exec_module(gate)


def test_a_missing_reference_stops_the_run_with_one_message(monkeypatch):
    monkeypatch.setenv(gate.REQUIRE, "1")
    monkeypatch.setitem(gate.REFERENCES, "no_such_reference_module",
                        ("The Reference", "pip install the-reference"))
    monkeypatch.setattr(gate, "CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(pytest.exit.Exception) as stopped:
        gate.pytest_configure(None)
    message = str(stopped.value)
    assert "The Reference (pip install the-reference)" in message
    assert "Chromium at /nonexistent/chromium" in message
    assert stopped.value.returncode == 4


def test_without_make_test_nothing_is_required(monkeypatch):
    monkeypatch.delenv(gate.REQUIRE, raising=False)
    monkeypatch.setitem(gate.REFERENCES, "no_such_reference_module", ("x", "y"))
    monkeypatch.setattr(gate, "CHROMIUM", "/nonexistent/chromium")
    assert importlib.util.find_spec("no_such_reference_module") is None  # missing, as is Chromium
    # and yet the gate returns instead of exiting: a developer's plain pytest may lack them
    assert gate.pytest_configure(None) is None
