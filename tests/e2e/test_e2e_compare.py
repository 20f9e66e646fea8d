"""xw.compare in JupyterLab and Notebook 7: the summary, the steps, ops and memory tabs, and the
two Trace Viewers aligned on a step, moving together; two PyTorch traces, whose Ops tab is the
trace diff HTA's TraceDiff makes."""

from __future__ import annotations

import json

import harness
import pytest

from xprof_widgets.analysis.compare_rows import stem

PAIRS = harness.REPO / "tests" / "data" / "compare"
HTA_DIFF = harness.REPO / "tests" / "data" / "public" / "hta" / "trace_diff"
READY = ".xw-compare[data-ready='1']"
AXIS_H, SECTION_H, DEPTH_H, TRACK_PAD = 30, 24, 18, 3  # js/src/trace_viewer/layout.js
TRACES_READY = ("() => document.querySelectorAll(\".xw-trace-viewer[data-ready='1']\").length "
                "=== 2")


def windows(page) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in w.split(",")) for w in page.evaluate(
        "() => [...document.querySelectorAll('.xw-trace-viewer')].map((e) => e.dataset.window)")]


def open_comparison(app, name: str, before: str, after: str, where=PAIRS):
    cells = [(f"import xprof_widgets as xw\ncmp = xw.compare({str(where / before)!r}, "
             f"{str(where / after)!r})\ncmp")]
    page = app.show(f"{name}.ipynb", cells, READY)
    page.wait_for_function(TRACES_READY, timeout=60_000)
    return page, page.locator(".xw-compare")


def kernel(page, code: str):
    return json.loads(harness.run_in_kernel(page, f"import json; print(json.dumps({code}))"))


def wait_chart(page) -> None:
    page.wait_for_function("""() => {
        const walk = (n) => !!n && (n.tagName === 'CANVAS' || [...(n.shadowRoot?.children ?? []),
            ...n.children].some(walk));
        return walk(document.querySelector('.xw-compare [data-chart="steps"]'));
    }""", timeout=30_000)


@pytest.mark.e2e
def test_a_larger_batch_in_jupyterlab(lab):
    page, widget = open_comparison(lab, "compare_batch", "batch_small.xplane.pb",
                                   "batch_large.xplane.pb")
    summary = widget.locator(".xw-cmp-summary").inner_text()
    assert summary == kernel(page, "cmp.summary()")
    assert summary.startswith("Step time ") and "Peak memory of jit_step (RAM)" in summary

    # Steps: the average step by part, a chart of both runs, every step slower.
    parts = widget.locator(".xw-cmp-breakdown tr[data-part]").all_inner_texts()
    assert [p.split("\t")[0] for p in parts] == kernel(
        page, "cmp.step_breakdown()['part'].tolist()")  # the step breakdown's names
    assert [p.split("\t")[0] for p in parts][:3] == ["Step time", "Host to device",
                                                      "Waiting for input"]
    wait_chart(page)
    steps = widget.locator("[data-panel='steps'] .xw-dt")
    assert steps.get_attribute("data-rows") == "4"  # 6 found, less the first and last (XProf's rule)
    assert set(steps.locator("tbody .xw-cmp-badge").all_inner_texts()) == {"slower"}
    page.set_viewport_size({"width": 1280, "height": 1400})
    harness.screenshot(widget, "compare_steps")

    # Ops: largest change first, renumbered fusions matched by fingerprint; facets filter.
    widget.locator(".xw-cmp-tabs button[data-tab='ops']").click()
    ops = widget.locator("[data-panel='ops'] .xw-dt")
    expected = kernel(page, "cmp.ops()['name'].tolist()")
    names = ops.locator("tbody tr td:nth-child(4)").all_inner_texts()
    assert names == expected
    assert "fingerprint" in ops.locator("tbody").inner_text()
    counts = widget.locator(".xw-cmp-counts").inner_text()
    assert "slower" in counts and "added" in counts
    harness.screenshot(widget, "compare_ops")
    ops.locator("select[data-facet='status']").select_option("slower")
    slower = kernel(page, "int((cmp.ops()['status'] == 'slower').sum())")
    page.wait_for_function("(n) => document.querySelector(\"[data-panel='ops'] .xw-dt\")"
                           ".dataset.rows === String(n)", arg=slower, timeout=5_000)
    ops.locator("select[data-facet='status']").select_option(label="all")
    widget.locator(".xw-cmp-by").select_option("category")
    page.wait_for_function("() => document.querySelector('.xw-compare').dataset.opsBy === "
                           "'category'", timeout=10_000)
    categories = kernel(page, "cmp.ops(by='category')['name'].tolist()")
    assert ops.locator("tbody tr td:nth-child(4)").all_inner_texts() == categories

    # Memory: the step's peak grew, and the buffers that grew are listed first.
    widget.locator(".xw-cmp-tabs button[data-tab='memory']").click()
    memory = widget.locator("[data-panel='memory']")
    assert "grew" in memory.locator(".xw-dt").first.inner_text()
    assert "Buffers live at the peak of jit_step" in memory.inner_text()
    first_buffer = memory.locator(".xw-dt").nth(1).locator("tbody tr").first.inner_text()
    assert "grew" in first_buffer
    harness.screenshot(widget, "compare_memory")
    page.set_viewport_size({"width": 1280, "height": 900})

    # The traces: step 3 of each starts at the same x; panning one moves the other.
    widget.locator(".xw-cmp-tabs button[data-tab='steps']").click()
    widget.locator(".xw-cmp-step").select_option("3")
    offset = kernel(page, "cmp.comparison.step_offset_us(3)")
    start = kernel(page, "cmp.comparison.step_span_us(3, 'before')[0]")
    page.wait_for_function("(s) => { const w = [...document.querySelectorAll('.xw-trace-viewer')]"
                           ".map((e) => Number(e.dataset.window.split(',')[0]));"
                           " return w[0] < s && s - w[0] < 2000; }", arg=start, timeout=10_000)
    (b0, b1), (a0, a1) = windows(page)
    assert a0 - b0 == pytest.approx(offset, abs=1e-3 * (b1 - b0))
    assert a1 - a0 == pytest.approx(b1 - b0, rel=1e-6)
    assert kernel(page, "cmp.view.step") == 3
    viewers = page.locator(".xw-trace-viewer")
    viewers.first.locator(".xw-tv-stage").focus()
    page.keyboard.press("w")  # zoom the before timeline
    page.wait_for_function("(b) => Number(document.querySelectorAll('.xw-trace-viewer')[1]"
                           ".dataset.window.split(',')[1]) < b - 1", arg=a1, timeout=10_000)
    page.wait_for_timeout(500)
    (b0, b1), (a0, a1) = windows(page)
    assert a0 - b0 == pytest.approx(offset, abs=1e-3 * (b1 - b0))
    assert a1 - a0 == pytest.approx(b1 - b0, rel=1e-4)
    page.set_viewport_size({"width": 1280, "height": 1300})
    traces = page.locator(".xw-cmp-traces")
    traces.scroll_into_view_if_needed()
    harness.screenshot(traces, "compare_traces")


@pytest.mark.e2e
def test_a_faster_loader_in_notebook7(notebook7):
    page, widget = open_comparison(notebook7, "compare_loader", "loader_slow.xplane.pb",
                                   "loader_fast.xplane.pb")
    summary = widget.locator(".xw-cmp-summary").inner_text()
    assert "Waiting for input -2" in summary
    wait_chart(page)
    steps = widget.locator("[data-panel='steps'] .xw-dt")
    assert set(steps.locator("tbody .xw-cmp-badge").all_inner_texts()) == {"faster"}
    input_row = widget.locator(".xw-cmp-breakdown tr[data-part='Waiting for input']").inner_text()
    assert "-2" in input_row.split("\t")[3]
    # The timelines open on the step that changed most (a stalled one), the picker says so.
    most = kernel(page, "cmp.comparison.most_changed_step()")
    picker = widget.locator(".xw-cmp-step")
    assert most != 0 and picker.input_value() == str(most)
    assert "changed most" in picker.locator("option:checked").inner_text()
    widget.locator(".xw-cmp-tabs button[data-tab='ops']").click()
    counts = widget.locator(".xw-cmp-counts").inner_text()
    assert "added" not in counts and "19 unchanged" in counts  # the same model: noise
    widget.locator(".xw-cmp-tabs button[data-tab='steps']").click()
    widget.locator(".xw-cmp-step").select_option("2")
    page.wait_for_function("() => document.querySelector('.xw-cmp-traces')?.innerText"
                           ".includes('step 2 from its start')", timeout=10_000)
    assert kernel(page, "cmp.view.step") == 2
    harness.screenshot(widget, "compare_loader_notebook7")


@pytest.mark.e2e
def test_a_run_without_steps_says_so_in_the_steps_tab(lab):
    page, widget = open_comparison(lab, "compare_no_steps", f"{PAIRS.name}/loader_fast.xplane.pb",
                                   "tpu_v6e_inference.xplane.pb", where=PAIRS.parent)
    message = widget.locator("[data-panel='steps'] .xw-cmp-message").inner_text()
    assert "(after) has no steps" in message and "StepTraceAnnotation" in message
    assert "not aligned" in page.locator(".xw-cmp-traces").inner_text()
    page.locator(".xw-cmp-tabs button[data-tab='ops']").click()
    assert "removed" in page.locator(".xw-cmp-counts").inner_text()


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_two_pytorch_traces(request, app_name):
    app = request.getfixturevalue(app_name)
    page, widget = open_comparison(app, f"compare_kineto_{app_name}", "control", "test",
                                   where=HTA_DIFF)
    summary = widget.locator(".xw-cmp-summary").inner_text()
    assert summary == kernel(page, "cmp.summary()")
    assert ("Ops and kernels (rank 3 step 1009 against rank 1 step 1009), by how often they ran: "
            "32 added, 138 removed, 35 more, 65 fewer, 162 same") in summary
    wait_chart(page)
    assert widget.locator("[data-panel='steps'] .xw-dt").get_attribute("data-rows") == "6"

    widget.locator(".xw-cmp-tabs button[data-tab='ops']").click()
    assert widget.get_attribute("data-ops-by") == "trace"
    panel = widget.locator("[data-panel='ops']")
    assert panel.locator(".xw-cmp-counts").inner_text().split() == [
        "32", "added", "138", "removed", "35", "more", "65", "fewer", "162", "same"]
    assert "Rank 3, step 1009 of before against rank 1, step 1009 of after" in panel.inner_text()
    table = panel.locator(".xw-dt")
    assert table.get_attribute("data-rows") == str(kernel(page, "len(cmp.trace_diff())"))
    first = table.locator("tbody tr").first.locator("td")
    expected = kernel(page, "cmp.trace_diff().iloc[0][['count_change', 'status', 'device', "
                            "'name']].tolist()")
    assert [first.nth(k).inner_text() for k in range(4)] == expected
    table.locator("select[data-facet='device']").select_option("gpu")
    gpu = kernel(page, "int((cmp.trace_diff()['device'] == 'gpu').sum())")
    page.wait_for_function("(n) => document.querySelector(\"[data-panel='ops'] .xw-dt\")"
                           ".dataset.rows === String(n)", arg=gpu, timeout=5_000)
    table.locator("select[data-facet='device']").select_option("")
    page.set_viewport_size({"width": 1280, "height": 1400})
    harness.screenshot(widget, f"compare_kineto_ops_{app_name}")
    # The timelines: rank 3's GPU 3 beside rank 1's GPU 1, row for row (no row of one run only).
    rows = kernel(page, "[[v._summary['sections']['name'], v._summary['tracks']['max_depth']] "
                        "for v in (cmp.before, cmp.after)]")
    assert rows[0][1] == rows[1][1] and "python3.8 (1) GPU 1" in rows[1][0]
    assert not any("only in" in name for side in rows for name in side[0])
    traces = page.locator(".xw-cmp-traces")
    traces.scroll_into_view_if_needed()
    harness.screenshot(traces, f"compare_kineto_traces_{app_name}")


ROW_LABELS = """(viewer) => viewer.querySelector('.xw-tv-tip:not([hidden]) .xw-tv-tip-name')?.textContent"""


@pytest.mark.e2e
def test_both_timelines_list_the_same_rows_in_the_same_order(lab):
    """The loader pair's threads under new ids and in another order: each row of before sits
    beside its match in after (the label column read row by row through its hover names), and
    the thread only the fast run has is an empty row in before, named so."""
    cells = [(f"import xprof_widgets as xw\ncmp = xw.compare({str(PAIRS / 'loader_slow.xplane.pb')!r}, "
              f"{str(PAIRS / 'loader_fast.xplane.pb')!r}, trace_height=520)\ncmp")]
    page = lab.show("compare_rows.ipynb", cells, READY)
    page.wait_for_function(TRACES_READY, timeout=60_000)
    page.set_viewport_size({"width": 1280, "height": 1400})
    traces = page.locator(".xw-cmp-traces")
    traces.scroll_into_view_if_needed()
    summaries = kernel(page, "[v._summary['tracks'] for v in (cmp.before, cmp.after)]")
    heights = [(d + 1) * DEPTH_H + 2 * TRACK_PAD for d in summaries[0]["max_depth"]]
    assert heights == [(d + 1) * DEPTH_H + 2 * TRACK_PAD for d in summaries[1]["max_depth"]]
    labels = []
    for index in range(2):
        viewer = page.locator(".xw-trace-viewer").nth(index)
        viewer.scroll_into_view_if_needed()
        box = viewer.locator(".xw-tv-stage canvas").first.bounding_box()
        seen, y = [], AXIS_H + SECTION_H
        for height in heights:
            page.mouse.move(box["x"] + 60, box["y"] + y + 8)
            page.wait_for_function(f"(v) => ({ROW_LABELS})(v)", arg=viewer.element_handle(),
                                   timeout=5_000)
            seen.append(page.evaluate(ROW_LABELS, viewer.element_handle()))
            page.mouse.move(box["x"] + 60, box["y"] + 2)  # off the labels: the tip goes
            y += height
        labels.append(seen)
    assert labels == [s["name"] for s in summaries]
    stems = [[stem(name).split(" · only in")[0] for name in side] for side in labels]
    assert stems[0] == stems[1]
    assert labels[0][-1].endswith(" · only in after") and labels[1][-1].startswith("tf_XLAPjRtCpuClient/")
    harness.screenshot(traces, "compare_same_rows")
