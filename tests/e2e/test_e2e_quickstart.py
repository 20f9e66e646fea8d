"""The quickstart notebook, as a user runs it: every tool draws, no error anywhere on the page."""

from __future__ import annotations

import shutil
from pathlib import Path

import harness
import pytest

QUICKSTART = harness.REPO / "notebooks" / "quickstart.ipynb"
DEMO = harness.REPO / "tests" / "data" / "jax_cpu_demo.xplane.pb"
# Widgets the quickstart shows: TraceViewer, OpProfile, MemoryViewer, InputPipeline, and the
# suite's first tab (Overview) from `%xprof`.
WIDGETS = 5


def stage(root: Path) -> Path:
    """The notebook beside a `demo_logdir` holding the committed demo profile (no JAX run)."""
    run = root / "demo_logdir" / "plugins" / "profile" / "2026_11_29_00_00_00"
    run.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEMO, run / "vm.xplane.pb")
    return Path(shutil.copyfile(QUICKSTART, root / "quickstart.ipynb"))


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_quickstart_runs_clean(app_fixture, request):
    lab = request.getfixturevalue(app_fixture)
    page = lab.open_and_run(stage(lab.server.root))
    lab.wait_ready(page, "[data-ready='1']")
    page.wait_for_function(f"() => document.querySelectorAll(\"[data-ready='1']\").length >= "
                           f"{WIDGETS} || document.querySelector(\"[data-ready='error']\")",
                           timeout=120_000)
    lab.wait_ready(page, "[data-ready='1']")  # re-checks stderr outputs and console errors
    assert page.locator("[data-ready='error']").count() == 0
    outputs = page.locator(".jp-OutputArea-output:not(.lm-mod-hidden)")
    texts = outputs.all_inner_texts()
    assert any("HIGHLY" in t for t in texts)  # the demo's slow loader is found
    for k, widget in enumerate(page.locator("[data-ready='1']").all()):
        widget.scroll_into_view_if_needed()
        harness.screenshot(widget, f"quickstart_{app_fixture}_{k}")
