"""Framework Op Stats on a PyTorch (Kineto) GPU trace in JupyterLab and Notebook 7: the Group by
list turns the table into the Operator view of PyTorch's TensorBoard plugin (by op, then by op
and input shape, then by call stack), the choice reaches Python, and Python's choice reaches the
view."""

from __future__ import annotations

import harness
import pytest

DLRM = harness.REPO / "tests" / "data" / "public" / "param" / "dlrm_v100_8rank" / \
    "worker0_step_12.1694128201545.pt.trace.json.gz"
WIDTH = 1400


def _ready(page, group_by: str) -> None:
    page.wait_for_function(
        "(g) => { const el = document.querySelector('.xw-fw');"
        " return el.dataset.ready === '1' && el.dataset.groupBy === g; }", arg=group_by,
        timeout=30_000)


def _headers(table) -> list[str]:
    return [k for k in table.locator("th").evaluate_all(
        "(ths) => ths.filter((th) => !th.hidden).map((th) => th.dataset.key)")]


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_operator_view_on_a_kineto_trace(request, app_name):
    app = request.getfixturevalue(app_name)
    cells = [f"import xprof_widgets as xw\nfw = xw.FrameworkOpStats({str(DLRM)!r})\nfw"]
    page = app.show(f"torch_operators_{app_name}.ipynb", cells, ".xw-fw[data-ready='1']", width=WIDTH)
    widget = page.locator(".xw-fw")
    widget.locator("select.xw-fw-group").select_option("op")
    _ready(page, "op")
    table = widget.locator(".xw-dt").nth(1)
    assert table.is_visible() and not widget.locator(".xw-dt").nth(0).is_visible()
    assert _headers(table)[:8] == [
        "operation", "type", "calls", "device_self_time_us", "device_total_time_us",
        "host_self_time_us", "host_total_time_us", "tensor_core_eligible"]
    assert int(table.get_attribute("data-rows")) == 130
    first = table.locator("tbody tr").first.locator("td").all_inner_texts()
    assert first[0] == "record_param_comms"  # the most device self time: NCCL collectives
    assert harness.run_in_kernel(page, "print(fw.group_by)").strip() == "op"

    harness.run_in_kernel(page, "fw.group_by = 'input_shape'")
    _ready(page, "input_shape")
    assert "input_shape" in _headers(table)
    page.wait_for_function(
        "() => document.querySelectorAll('.xw-fw .xw-chart[data-drawn=\"1\"]').length === 4",
        timeout=30_000)
    height = widget.evaluate("(el) => el.getBoundingClientRect().height")
    page.set_viewport_size({"width": WIDTH, "height": int(height) + 400})
    widget.scroll_into_view_if_needed()
    page.wait_for_timeout(600)
    harness.screenshot(widget, "framework_op_stats_torch_operators"
                       + ("" if app_name == "lab" else f"_{app_name}"))

    harness.run_in_kernel(page, "fw.group_by = 'call_stack'")
    _ready(page, "call_stack")
    assert int(table.get_attribute("data-rows")) == int(harness.run_in_kernel(
        page, "print(len(fw.to_dataframe(group_by='call_stack')))"))
    # this run was recorded without with_stack: an empty column is hidden and the status says why
    assert "input_shape" not in _headers(table) and "call_stack" not in _headers(table)
    assert "no call stacks (record with with_stack=True)" in widget.locator(".xw-status").inner_text()
