"""Degrade, don't die, for the tools: one tool that fails on a profile takes down its own tab
only; the suite says what failed (its tab and profile.warnings, once) and every other tab opens."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import ipywidgets
import pytest

import xprof_widgets as xw
from xprof_widgets import tools as registry
from xprof_widgets.widgets._base import RequestWidget
from xprof_widgets.widgets.profiler import Profiler

DATA = Path(__file__).parents[1] / "data"
PROFILES = [DATA / "synthetic_gpu.xplane.pb", DATA / "tf_keras_cpu_slow_map.xplane.pb"]


def failures(profile) -> list[str]:
    return [w for w in profile.warnings if "failed on this profile" in w
            or "could not tell whether" in w]


@pytest.mark.parametrize("path", PROFILES, ids=[p.name for p in PROFILES])
@pytest.mark.parametrize("key", registry.KEYS)
def test_a_tool_that_fails_leaves_the_other_tabs_working(path, key, monkeypatch):
    profile = xw.open_profile(path)
    entry = registry.tool(key)
    if not entry.offered_for(profile):
        pytest.skip(f"the {entry.title} is not offered for {path.name}")
    widget_class = getattr(import_module(entry.module, "xprof_widgets"), entry.name)

    def broken(self, *args, **kwargs):
        raise RuntimeError(f"injected failure in {entry.name}")

    monkeypatch.setattr(widget_class, "__init__", broken)
    suite = Profiler(profile, tool="trace" if key != "trace" else "overview")
    try:
        made = {k: suite.tool(k) for k in suite.tab_keys}
        shown = made[key]
        assert isinstance(shown, ipywidgets.Label)
        assert f"injected failure in {entry.name}" in shown.value
        assert f"the {entry.title} failed" in shown.value
        assert failures(profile) == [shown.value]
        others = [w for k, w in made.items() if k != key]
        assert others and all(isinstance(w, RequestWidget) for w in others)
        assert all(shown.value in w._notes for w in others)  # their notes say so too
        again = Profiler(profile)  # the same profile, shared: the note is not repeated
        again.tool(key)
        assert failures(profile) == [shown.value]
        again.close()
    finally:
        suite.close()


def test_a_failing_availability_check_offers_the_tab_and_says_so(monkeypatch):
    profile = xw.open_profile(PROFILES[0])
    entry = registry.tool("kernel_stats")

    def broken(_profile):
        raise ValueError("injected check failure")

    monkeypatch.setattr(registry, "TOOLS", tuple(
        registry.Tool(t.key, t.title, t.module, t.name, broken) if t.key == entry.key else t
        for t in registry.TOOLS))
    assert entry.key in [t.key for t in registry.offered(profile)]
    assert registry.offered(profile)  # asked twice: said once
    note = (f"{profile.source}: could not tell whether the Kernel Stats has data "
            "(ValueError: injected check failure).")
    assert failures(profile) == [note]
