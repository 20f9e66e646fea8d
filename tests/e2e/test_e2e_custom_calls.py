"""Custom-call tracing and perf counters in real JupyterLab and Notebook 7, on the synthetic
`--custom-calls` TPU profile: LLO utilization drawn as one counter per unit above the core's
rows, the instruction lines with their details, and the PerfCounters table."""

from __future__ import annotations

import harness
import pytest

FIXTURE = harness.REPO / "tests" / "data" / "custom_calls" / "tpu_custom_calls.xplane.pb"
TV_READY = ".xw-trace-viewer[data-ready='1']"
PC_READY = ".xw-pc[data-ready='1']"
FIRST_CALL = ("e = tv.profile.events(track='/device:TPU:0/XLA Ops', name='^custom-call').iloc[0]"
              "\ns, d = float(e.start_us), float(e.duration_us)")


@pytest.mark.e2e
def test_llo_lines_in_the_trace_viewer(lab):
    cells = [f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(FIXTURE)!r}, height=640)\ntv"]
    page = lab.show("custom_calls_trace.ipynb", cells, TV_READY)
    widget = page.locator(".xw-trace-viewer")
    names = harness.run_in_kernel(page, (
        "t = tv.profile.tracks; c = t[(t.section == '/device:TPU:0')]\n"
        "print('|'.join(f'{n}:{k}' for n, k in zip(c.name, c.kind)))")).strip().split("|")
    assert names[:7] == [f"{u}:counter" for u in ("Scalar ALU", "Vector ALU", "Vector EUP",
                                                   "Vector Load", "Vector Store", "XLU", "MXU")]
    assert "MXU0 Instructions:slices" in names and "LLO Instructions:slices" in names
    before = widget.get_attribute("data-window")
    harness.run_in_kernel(page, f"{FIRST_CALL}\ntv.window = (s - d * 0.1, s + d * 1.1)")
    page.wait_for_function(
        "(b) => document.querySelector('.xw-trace-viewer').dataset.window !== b", arg=before,
        timeout=10_000)
    page.wait_for_selector(TV_READY, timeout=20_000)
    harness.run_in_kernel(page, (
        "b = tv.profile.events(track='/device:TPU:0/LLO Instructions').iloc[0]\n"
        "tv.selected_events = [int(b.event)]"))
    details = widget.locator(".xw-tv-details")
    page.wait_for_function(
        "() => document.querySelector('.xw-trace-viewer .xw-tv-details')?.innerText"
        ".includes('llo_scopes')", timeout=20_000)
    text = details.inner_text()
    assert "bundle_number" in text and "softmax/row_max" in text and "kernels/softmax.py" in text
    hits = harness.run_in_kernel(page, "print(len(tv.search('vmatmul.bf16')))")
    assert int(hits) > 0
    harness.screenshot(widget, "trace_viewer_llo")


@pytest.mark.e2e
def test_perf_counters_table_in_notebook7(notebook7):
    cells = [f"import xprof_widgets as xw\npc = xw.PerfCounters({str(FIXTURE)!r})\npc"]
    page = notebook7.show("perf_counters.ipynb", cells, PC_READY)
    widget = page.locator(".xw-pc")
    assert "Counter samples\n14" in widget.locator(".xw-tiles").inner_text()
    table = widget.locator(".xw-dt")
    assert table.get_attribute("data-rows") == "14"
    table.locator("select[data-facet='chip']").select_option("1")
    assert table.get_attribute("data-rows") == "7"
    assert "0x" in table.locator("tbody").inner_text()
    table.locator("input.xw-dt-filter").fill("hbm")
    assert table.get_attribute("data-rows") == "2"
    table.locator("input.xw-dt-filter").fill("")
    table.locator("select[data-facet='chip']").select_option("")
    widget.locator("input[type='checkbox']").uncheck()
    page.wait_for_function("() => document.querySelector('.xw-pc')?.dataset.ready === '1'",
                           timeout=10_000)
    assert harness.run_in_kernel(page, "print(pc.nonzero_only)").strip() == "False"
    harness.screenshot(widget, "perf_counters_notebook7")
