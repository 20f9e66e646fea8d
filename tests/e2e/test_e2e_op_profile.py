"""OpProfile in a real JupyterLab: the table renders, a category expands, the detail card shows,
sorting and grouping reorder rows (from the view and from Python), the roofline draws, a fusion
opens to its instructions, and a profile without ops says so."""

from __future__ import annotations

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
READY = ".xw-op-profile[data-ready='1']"
ROOFLINE = ".xw-op-profile[data-roofline='1']"


# Labels of the visible rows of one kind, top to bottom.
LABELS = """(kind) => [...document.querySelectorAll(
  `.xw-op-profile .xw-op-table tbody tr[data-kind='${kind}'] td.xw-op-name`)]
  .map((td) => td.title)"""



def open_profile(lab, name: str, source: str):
    cells = [f"import xprof_widgets as xw\nop = xw.OpProfile({source})\nop"]
    page = lab.open_and_run(lab.notebook(f"{name}.ipynb", cells))
    return page


def unscroll(widget) -> None:
    """Hovering scrolls the table sideways; pictures show it from its left edge."""
    widget.locator(".xw-op-table-wrap").evaluate("(wrap) => { wrap.scrollLeft = 0; }")
    widget.page.wait_for_timeout(300)


def rgb(cell) -> tuple[int, ...]:
    colour = cell.evaluate("(td) => getComputedStyle(td).backgroundColor")
    return tuple(int(float(v)) for v in colour[colour.index("(") + 1:-1].split(",")[:3])


def labels(page, kind: str) -> list[str]:
    return page.evaluate(LABELS, kind)


def wait_labels(page, kind: str, condition: str, timeout: float = 10_000) -> list[str]:
    page.wait_for_function(f"(kind) => {{ const l = ({LABELS})(kind); return {condition}; }}",
                           arg=kind, timeout=timeout)
    return labels(page, kind)


@pytest.mark.e2e
def test_op_profile_table_card_sorting_grouping_roofline(lab):
    page = open_profile(lab, "op_profile_tpu", repr(str(TPU)))
    lab.wait_ready(page, READY)
    widget = page.locator(".xw-op-profile")

    # The overview and the category rows, largest first, IDLE last.
    overview = widget.locator(".xw-op-overview").inner_text()
    assert "TPU v6 Lite" in overview and "13.4%" in overview
    assert "memory-bound copy-done ops" in overview
    groups = labels(page, "group")
    assert groups == ["copy-done", "loop fusion", "all-reduce", "broadcast", "copy-start"]
    assert labels(page, "idle") == ["IDLE"] and labels(page, "op") == []

    # A category expands to its ops; utilization cells are coloured.
    widget.locator("tr[data-kind='group']", has_text="loop fusion").locator(
        "[data-toggle]").click()
    ops = wait_labels(page, "op", "l.length === 3")
    assert set(ops) == {"broadcast_add_fusion", "broadcast_add_fusion.1",
                        "broadcast_add_fusion.2"}
    flops_cell, bw_cell = widget.locator("tr[data-kind='op']").first.locator("td.xw-op-util").all()
    red, green = rgb(flops_cell), rgb(bw_cell)  # 0.02% of peak FLOPS, 80% of peak bandwidth
    assert red[0] > red[1] and green[1] > green[0], (red, green)

    # Hover shows the detail card; a click pins it.
    first_op = widget.locator("tr[data-kind='op']").first
    first_op.locator("td.xw-op-name").hover()
    card = widget.locator(".xw-op-card:not([hidden])")
    card.wait_for(timeout=10_000)
    assert card.locator(".xw-op-card-title").inner_text().startswith(ops[0])
    assert "%broadcast_add_fusion" in card.locator(".xw-op-expression").inner_text()
    assert "T(8,128)" in card.inner_text() and "host_offload_stress_test.py:29" in card.inner_text()
    first_op.locator("td.xw-op-name").click()
    widget.locator(".xw-op-overview").hover()
    assert widget.locator(".xw-op-card:not([hidden])").count() == 1  # pinned: stays
    page.set_viewport_size({"width": 1280, "height": 1700})  # the whole widget in one picture
    unscroll(widget)
    harness.screenshot(widget, "op_profile_card")

    # The fusion opens to the instructions inside it (from the HLO proto).
    card.locator(".xw-op-card-close").click()
    assert widget.locator(".xw-op-card:not([hidden])").count() == 0
    first_op.locator("[data-toggle]").click()
    page.wait_for_function("() => document.querySelectorAll(\".xw-op-profile tr[data-kind='fused']"
                           " td.xw-op-name\").length === 3", timeout=10_000)

    # The roofline: BokehJS from the kernel, drawn into a canvas inside Bokeh's shadow DOM.
    lab.wait_ready(page, ROOFLINE)
    roofline = widget.locator(".xw-op-roofline")
    page.wait_for_function("""() => {
        const walk = (n) => !!n && (n.tagName === 'CANVAS' || [...(n.shadowRoot?.children ?? []),
            ...n.children].some(walk));
        return walk(document.querySelector('.xw-op-roofline'));
    }""", timeout=20_000)
    assert roofline.bounding_box()["height"] > 250
    page.mouse.move(0, 0)
    unscroll(widget)
    harness.screenshot(widget, "op_profile_tpu")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Sorting by FLOPS utilization from the view reorders the groups.
    widget.locator(".xw-op-controls select").nth(1).select_option("flops_utilization")
    by_flops = wait_labels(page, "group", "l[0] === 'loop fusion'")
    assert by_flops[:2] == ["loop fusion", "all-reduce"]

    # Grouping by program, from Python: the view follows the trait.
    harness.run_in_kernel(page, "op.sort_by = 'time'; op.group_by = 'program'")
    programs = wait_labels(page, "group", "l[0] === 'jit_f'")
    assert programs == ["jit_f", "jit__psum", "jit_broadcast_in_dim"]
    assert widget.locator(".xw-op-controls select").first.input_value() == "program"
    harness.screenshot(widget, "op_profile_by_program")

    # The name filter (a regex) keeps matching ops only; Python sees the control too.
    widget.locator(".xw-op-controls input[type='search']").fill("^all-")
    wait_labels(page, "group", "l.length === 1 && l[0] === 'jit__psum'")
    assert harness.run_in_kernel(page, "print(op.name_filter)").strip() == "^all-"


@pytest.mark.e2e
def test_op_profile_without_ops_says_what_was_read(lab, tmp_path):
    import sys

    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from xspace_builder import build_xspace

    host = {"name": "/host:CPU", "lines": [{"name": "python", "events": [
        ("train_step", 0, 1000, {}), ("load_batch", 2000, 500, {})]}]}
    path = lab.server.root / "host_only.xplane.pb"
    path.write_bytes(build_xspace([host]))
    page = open_profile(lab, "op_profile_empty", repr(str(path)))
    lab.wait_ready(page, ".xw-op-profile[data-ready='no-ops']")
    message = page.locator(".xw-op-message").inner_text()
    assert "no XLA ops" in message and "/host:CPU" in message and "hlo_op" in message
    assert page.locator(".xw-op-table").count() == 0
    harness.screenshot(page.locator(".xw-op-profile"), "op_profile_no_ops")


@pytest.mark.e2e
def test_op_profile_of_a_cpu_profile_shows_no_invented_utilization(lab):
    import subprocess
    import sys

    logdir = lab.server.root / "cpu_demo"
    subprocess.run([sys.executable, "-m", "xprof_widgets.demo", str(logdir), "--steps", "8"],
                   check=True, capture_output=True, timeout=180)
    page = open_profile(lab, "op_profile_cpu", repr(str(logdir)))
    lab.wait_ready(page, READY)
    widget = page.locator(".xw-op-profile")
    overview = widget.locator(".xw-op-overview").inner_text()
    assert "CPU" in overview and "no peak" in overview and "peak_tflops=" in overview
    groups = labels(page, "group")
    assert "convolution fusion" in groups
    widget.locator("tr[data-kind='group']").first.locator("[data-toggle]").click()
    wait_labels(page, "op", "l.length > 0")
    cells = widget.locator("tr[data-kind='op'] td.xw-op-util")
    assert set(cells.all_inner_texts()) == {"no peak"}
    lab.wait_ready(page, ROOFLINE)
    page.set_viewport_size({"width": 1280, "height": 1700})
    unscroll(widget)
    harness.screenshot(widget, "op_profile_cpu")
    page.set_viewport_size({"width": 1280, "height": 900})
