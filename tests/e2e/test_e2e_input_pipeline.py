"""InputPipeline in a real JupyterLab: summary, charts, sortable op table, a profile without
steps, and op names that look like HTML."""

from __future__ import annotations

import sys

import harness
import pytest

DEMO = harness.REPO / "tests" / "data" / "expected" / "input_pipeline_demo.xplane.pb"
TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
READY = ".xw-ip[data-ready='1']"
HTML_NAME = "load_<img src=x onerror=\"window.__xwPwned=1\">"

COLUMN = """(i) => [...document.querySelectorAll('.xw-ip-table tbody tr')]
  .map((tr) => tr.children[i].textContent)"""



def open_widget(lab, name: str, source: str):
    cells = [f"import xprof_widgets as xw\nip = xw.InputPipeline({source})\nip"]
    page = lab.open_and_run(lab.notebook(f"{name}.ipynb", cells))
    lab.wait_ready(page, READY)
    return page, page.locator(".xw-ip")


@pytest.mark.e2e
def test_input_pipeline_demo_profile(lab):
    page, widget = open_widget(lab, "input_pipeline", repr(str(DEMO)))
    badge = widget.locator(".xw-ip-badge")
    assert badge.inner_text() == "HIGHLY input-bound"
    assert badge.get_attribute("data-verdict") == "HIGHLY"
    summary = widget.locator(".xw-ip-summary").inner_text()
    assert "of step time waiting for input" in summary and "14 steps" in summary
    # The 2 of the 16 steps found that XProf's rule leaves out, named with the reason.
    left_out = widget.locator(".xw-ip-left-out").inner_text()
    assert "train 0: first of more than 5 steps" in left_out
    assert "train 15: last of more than 5 steps" in left_out
    assert "Demanded file read" in summary and "load_batch" in summary
    stats = widget.locator(".xw-ip-stats td").all_inner_texts()
    assert len(stats) == 4 and all(float(v) > 0 for v in stats)
    # Three Bokeh charts drew: step time, input share per step, host categories.
    for chart in ("steps", "share", "host"):
        assert widget.locator(f"[data-chart='{chart}'] canvas").count() >= 1, chart
    breakdown = widget.locator(".xw-ip-breakdown").inner_text()
    assert "Enqueue" in breakdown and "Other input time" in breakdown

    # The op table: largest self time first; a title click sorts by it, a second reverses.
    heads = widget.locator(".xw-ip-table th")
    assert heads.all_inner_texts() == ["Input Op", "Count", "Total Time (ms)", "Total Time %",
                                       "Total Self Time (ms)", "Total Self Time %", "Category"]
    assert page.evaluate(COLUMN, 0)[0] == "load_batch"
    assert heads.nth(4).get_attribute("aria-sort") == "descending"
    heads.nth(0).click()
    assert page.evaluate(COLUMN, 0) == ["DevicePut", "input_pipeline", "load_batch",
                                        "preprocess_batch"]
    assert heads.nth(0).get_attribute("aria-sort") == "ascending"
    heads.nth(0).click()
    assert page.evaluate(COLUMN, 0)[0] == "preprocess_batch"
    heads.nth(2).click()
    totals = [float(v) for v in page.evaluate(COLUMN, 2)]
    assert totals == sorted(totals, reverse=True)
    heads.nth(4).click()  # back to the default order for the picture
    harness.picture(page, widget, "input_pipeline")


@pytest.mark.e2e
def test_input_pipeline_without_steps_says_how_to_mark_them(lab):
    page, widget = open_widget(lab, "input_pipeline_no_steps", repr(str(TPU)))
    assert widget.locator(".xw-ip-badge").inner_text() == "No steps found"
    message = widget.locator(".xw-ip-nosteps").inner_text()
    assert "Steps" in message and "_r" in message and "group_id" in message
    assert "jax.profiler.StepTraceAnnotation" in message
    assert widget.locator(".xw-ip-stats").count() == 0
    # The host side still shows what it found.
    assert page.evaluate(COLUMN, 0) == ["DevicePut"]
    assert widget.locator("[data-chart='host'] canvas").count() >= 1
    harness.picture(page, widget, "input_pipeline_no_steps")


@pytest.mark.e2e
def test_input_op_names_are_text(lab):
    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from xspace_builder import build_xspace

    us = 1_000_000
    events = []
    for k in range(3):
        events += [("train", 100 * k * us, 90 * us, {"_r": 1, "step_num": k}),
                   (HTML_NAME, (100 * k + 5) * us, 40 * us, {})]
    path = lab.server.root / "html_names.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "python", "events": events}]}]))
    page, widget = open_widget(lab, "input_pipeline_html", repr(str(path)))
    assert page.evaluate(COLUMN, 0) == [HTML_NAME]
    assert widget.locator(".xw-ip-table img").count() == 0
    assert page.evaluate("() => window.__xwPwned") is None
    assert HTML_NAME in widget.locator(".xw-ip-recommendation").inner_text()
