"""MemoryProfile in real JupyterLab and Notebook 7: the summary, timeline and breakdown draw;
hovering the timeline fills the snapshot card; the allocator picker and the Python traits switch
allocators both ways; free memory starts hidden where it dwarfs the rest; a profile without
allocator events says where they come from; in the suite, a click on the timeline shows that
moment in the Trace Viewer. PyTorch profiler traces (`[memory]` events): a CUDA device's
allocated and reserved bytes, each allocation live at its peak and memory per op (the
TensorBoard plugin's Memory View), the same run written without addresses or totals (older
PyTorch), and a CPU trace in Notebook 7."""

from __future__ import annotations

import harness
import pytest

DATA = harness.REPO / "tests" / "data"
TPU = DATA / "tpu_v6e_inference.xplane.pb"
TF = DATA / "tf_keras_cpu_slow_map.xplane.pb"
GPU = DATA / "synthetic_gpu_allocator.xplane.pb"
TORCH_CUDA = DATA / "public" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
TORCH_CPU = DATA / "torch_hta" / "rank-0.json.gz"
TORCH_NO_ADDR = DATA / "torch_memory_no_addr" / "trace.json.gz"
READY = ".xw-mp[data-ready='1']"

# Page coordinates of time `ms` (the x of the data) at height fraction `f` of the plot frame.
PLOT_POINT = """([ms, f]) => {
  const host = document.querySelector(".xw-mp [data-chart='timeline']");
  const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
  const canvas = plot.canvas_view.el.getBoundingClientRect();
  const frame = plot.frame.bbox;
  return {x: canvas.left + plot.frame.x_scale.compute(ms), y: canvas.top + frame.top + f * frame.height};
}"""
# A column of the timeline's data source, or whether the free-memory area is drawn.
SOURCE = """(name) => {
  const host = document.querySelector(".xw-mp [data-chart='timeline']");
  const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
  const doc = plot.model.document;
  return name === "free_visible" ? doc.get_model_by_name("free_area").visible
    : [...doc.get_model_by_name("timeline").data[name]];
}"""

# The text of the peak's label on the timeline.
PEAK_LABEL = """() => {
  const host = document.querySelector(".xw-mp [data-chart='timeline']");
  const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
  return plot.model.document.get_model_by_name("peak_label").text;
}"""


def open_profile(app, name: str, source: str):
    cells = [f"import xprof_widgets as xw\nmp = xw.MemoryProfile({source})\nmp"]
    page = app.show(f"{name}.ipynb", cells, READY)
    return page, page.locator(".xw-mp")


def wait_drawn(page, memory: str) -> None:
    page.wait_for_selector(f"{READY}[data-memory='{memory}']", timeout=20_000)


def click_to_trace(page, ms: float) -> str:
    """Clicks the suite's memory timeline at `ms`; once the suite shows the Trace Viewer around
    that moment with events selected, the names of those events (printed by the kernel)."""
    point = page.evaluate(PLOT_POINT, [ms, 0.9])
    page.mouse.click(point["x"], point["y"])
    # This poll may make the trace tab while the click's link makes it on the kernel's subshell.
    for _ in range(50):
        shown = harness.run_in_kernel(page, (
            "print(suite.tab_keys[suite.tabs.selected_index], *suite.tool('trace').window)"))
        if shown.startswith("trace"):
            break
        page.wait_for_timeout(100)
    key, start, end = shown.split()
    assert key == "trace" and float(start) < ms * 1000 < float(end)
    page.wait_for_function("() => Number(document.querySelector('.xw-trace-viewer')"
                           "?.dataset.selected || 0) > 0", timeout=30_000)
    return harness.run_in_kernel(page, (
        "print(sorted(set(suite.profile.events_frame(suite.tool('trace').selected_events)"
        "['name'])))"))


def hover_at(page, ms: float) -> None:
    page.locator(".xw-mp [data-chart='timeline']").scroll_into_view_if_needed()
    point = page.evaluate(PLOT_POINT, [ms, 0.5])
    page.mouse.move(point["x"], point["y"])


@pytest.mark.e2e
def test_memory_profile_tpu_allocators(lab):
    page, widget = open_profile(lab, "memory_profile_tpu", repr(str(TPU)))
    assert widget.get_attribute("data-memory") == "0"
    summary = widget.locator(".xw-mp-summary").inner_text()
    assert "20.02 GiB" in summary and "33550237696" not in summary  # peak, in binary units
    assert "117" in summary and "31.25 GiB" in summary  # allocations, capacity
    options = widget.locator("select").nth(1).locator("option").all_inner_texts()
    assert options == ["0", "1", "2", "3"]
    assert widget.locator("select").first.is_hidden()  # one host: no host picker
    table = widget.locator(".xw-dt")
    assert table.get_attribute("data-rows") == "6"
    assert table.locator("tbody tr").first.inner_text().startswith("stack")
    assert page.evaluate(SOURCE, "free_visible") is True  # capacity near the peak: shown
    # The card starts at the peak; hovering the timeline shows the snapshot under the pointer.
    card = widget.locator(".xw-mp-card")
    assert "In use\n20.02 GiB (stack 20.02 GiB, heap 837.13 KiB)" in card.inner_text()
    times = page.evaluate(SOURCE, "x")
    hover_at(page, (times[5] + times[6]) / 2)
    page.wait_for_function("() => document.querySelector('.xw-mp-card').dataset.snapshot === '5'",
                           timeout=10_000)
    assert "allocation" in card.inner_text()
    harness.picture(page, widget, "memory_profile_tpu")

    # The picker switches allocators; so does the trait, from Python.
    widget.locator("select").nth(1).select_option("2")
    wait_drawn(page, "2")
    assert harness.run_in_kernel(page, "print(mp.memory_id)").strip() == "2"
    harness.run_in_kernel(page, "mp.memory_id = '3'")
    wait_drawn(page, "3")
    assert widget.locator("select").nth(1).input_value() == "3"


@pytest.mark.e2e
def test_memory_profile_tensorflow_cpu(lab):
    page, widget = open_profile(lab, "memory_profile_tf", repr(str(TF)))
    assert widget.get_attribute("data-memory") == "mklcpu"
    assert page.evaluate(SOURCE, "free_visible") is False  # 23.6 GiB of RAM beside 7.5 MiB
    assert "Free memory is hidden" in widget.locator(".xw-mp-note").inner_text()
    assert len(page.evaluate(SOURCE, "x")) == 192
    title = widget.locator(".xw-mp-section").inner_text()
    assert "7.50 MiB" in title and "step 14" in title
    table = widget.locator(".xw-dt")
    assert "unused preallocated device memory" in table.inner_text()
    table.locator("input.xw-dt-filter").fill("adam")
    assert int(table.get_attribute("data-rows")) >= 1
    assert "unused preallocated" not in table.locator("tbody").inner_text()
    table.locator("input.xw-dt-filter").fill("")
    harness.picture(page, widget, "memory_profile_tf")


@pytest.mark.e2e
def test_memory_profile_gpu_in_notebook7(notebook7):
    page, widget = open_profile(notebook7, "memory_profile_gpu", repr(str(GPU)))
    assert widget.get_attribute("data-memory") == "GPU_0_bfc"
    assert "1,123 snapshots" not in widget.inner_text()  # all drawn: under the view's limit
    assert len(page.evaluate(SOURCE, "x")) == 1123
    widget.locator("select").nth(1).select_option("GPU_1_bfc")
    wait_drawn(page, "GPU_1_bfc")
    rows = int(widget.locator(".xw-dt").first.get_attribute("data-rows"))
    assert rows == int(harness.run_in_kernel(page, "print(len(mp.breakdown()))"))
    harness.picture(page, widget, "memory_profile_gpu_notebook7")


@pytest.mark.e2e
def test_memory_profile_without_allocator_events(notebook7):
    _, widget = open_profile(notebook7, "memory_profile_none",
                             repr(str(DATA / "jax_cpu_demo.xplane.pb")))
    assert widget.get_attribute("data-state") == "message"
    message = widget.locator(".xw-mp-message").inner_text()
    assert "MemoryAllocation" in message and "Memory Viewer" in message
    assert widget.locator(".xw-mp-body").is_hidden()


@pytest.mark.e2e
def test_memory_profile_in_the_suite_shows_a_moment_in_the_trace(lab):
    logdir = lab.logdir("mp_logdir", {"vm.xplane.pb": TF})
    source = f"import xprof_widgets as xw\nsuite = xw.Profiler({logdir!r}, tool='memory_profile')"
    cells = [f"{source}\nsuite"]
    page = lab.show("memory_profile_suite.ipynb", cells, READY)
    widget = page.locator(".xw-mp")
    assert "Click the timeline" in widget.locator(".xw-mp-card").inner_text()
    times = page.evaluate(SOURCE, "x")
    selected = click_to_trace(page, (times[40] + times[41]) / 2)
    assert "ExecutorState::Process" in selected  # TensorFlow's executor, on the allocating thread


@pytest.mark.e2e
def test_memory_profile_pytorch_cuda_trace(lab):
    page, widget = open_profile(lab, "memory_profile_torch_cuda", repr(str(TORCH_CUDA)))
    assert widget.get_attribute("data-memory") == "cuda:1"  # the accelerator before the CPU
    assert widget.locator("select").nth(1).locator("option").all_inner_texts() == ["cuda:1", "cpu"]
    summary = widget.locator(".xw-mp-summary").inner_text()
    assert "Peak allocated\n6.17 GiB" in summary and "Reserved at the peak\n11.90 GiB" in summary
    assert "725 allocations" in summary and "Fragmentation" not in summary
    assert "by aten::empty" in summary
    assert page.evaluate(PEAK_LABEL).endswith("(aten::empty)")  # the op at the peak, named
    assert page.evaluate(SOURCE, "free_visible") is True  # reserved, not allocated: drawn
    assert len(page.evaluate(SOURCE, "x")) == 4000  # 26,770 snapshots, the view's reduction
    assert "26,770 snapshots, 4,000 drawn" in widget.locator(".xw-mp-note").inner_text()
    table = widget.locator(".xw-dt").first
    assert table.get_attribute("data-rows") == "726"  # 725 allocations + what predates the trace
    rows = table.locator("tbody tr")
    assert rows.first.inner_text().startswith("allocated before the trace\t3.82 GiB")
    second = rows.nth(1).inner_text()
    assert second.startswith("aten::mm\t94.00 MiB\t0x7f41") and "thread 785244" in second
    table.locator("input.xw-dt-filter").fill("before the trace")
    assert table.get_attribute("data-rows") == "1"
    table.locator("input.xw-dt-filter").fill("")
    # The card starts at the peak: the allocation that made it, by aten::empty.
    card = widget.locator(".xw-mp-card")
    text = card.inner_text()
    assert "Allocated by\naten::empty" in text and "Reserved\n11.90 GiB" in text
    times = page.evaluate(SOURCE, "x")
    hover_at(page, (times[5] + times[6]) / 2)
    page.wait_for_function("() => document.querySelector('.xw-mp-card').dataset.snapshot === '5'",
                           timeout=10_000)
    assert "Address\n0x" in card.inner_text()
    ops = widget.locator(".xw-mp-ops .xw-dt")
    assert ops.get_attribute("data-rows") == "34"
    assert "TensorBoard plugin's Memory View" in widget.locator(".xw-mp-ops .xw-mp-section").inner_text()
    first = ops.locator("tbody tr").first.inner_text().split("\t")
    assert first[:4] == ["aten::mul", "2,295", "11.55 GiB", "11.55 GiB"]  # the plugin's numbers
    harness.picture(page, widget, "memory_profile_torch_cuda")

    widget.locator("select").nth(1).select_option("cpu")
    wait_drawn(page, "cpu")
    assert table.get_attribute("data-rows") == "1"
    assert ops.get_attribute("data-rows") == "3"
    assert harness.run_in_kernel(page, "print(mp.memory_id)").strip() == "cpu"

    # The same run as PyTorch 1.9 wrote it: no addresses, no totals (issue 30 item 6).
    page, widget = open_profile(lab, "memory_profile_torch_no_addr", repr(str(TORCH_NO_ADDR)))
    summary = widget.locator(".xw-mp-summary").inner_text()
    assert "Peak allocated\n2.36 GiB" in summary and "725 allocations" in summary
    assert "Reserved at the peak\nunknown" in summary and "paired by size" in summary
    table = widget.locator(".xw-dt").first
    assert table.get_attribute("data-rows") == "725"  # nothing 'allocated before the trace'
    assert "before the trace" not in table.inner_text()
    assert "Reserved\nunknown" in widget.locator(".xw-mp-card").inner_text()
    assert page.evaluate(SOURCE, "free_visible") is False  # no reserved area to draw
    assert "records no reserved bytes" in widget.locator(".xw-mp-note").inner_text()
    assert table.get_attribute("data-hidden-columns") == "address"  # none in the trace
    harness.picture(page, widget, "memory_profile_torch_no_addr")


@pytest.mark.e2e
def test_memory_profile_pytorch_cpu_in_notebook7(notebook7):
    page, widget = open_profile(notebook7, "memory_profile_torch_cpu", repr(str(TORCH_CPU)))
    assert widget.get_attribute("data-memory") == "cpu"
    assert widget.locator("select").nth(1).is_disabled()  # one device
    summary = widget.locator(".xw-mp-summary").inner_text()
    assert "Peak allocated\n133.13 KiB" in summary and "step 4" in summary
    assert len(page.evaluate(SOURCE, "x")) == 431
    rows = int(widget.locator(".xw-dt").first.get_attribute("data-rows"))
    assert rows == int(harness.run_in_kernel(page, "print(len(mp.breakdown()))")) == 26
    title = widget.locator(".xw-mp-section").first.inner_text()
    assert "133.13 KiB" in title and "one row per allocation" in title
    # memory by op, the TensorBoard plugin's Memory View, as memory_by_op() has it
    ops = widget.locator(".xw-mp-ops .xw-dt")
    expected = harness.run_in_kernel(page, "t = mp.memory_by_op(); print(len(t)); print(t.iloc[0, 0])")
    rows, first = expected.strip().split("\n")
    assert ops.get_attribute("data-rows") == rows
    assert ops.locator("tbody tr").first.inner_text().split("\t")[0] == first
    harness.picture(page, widget, "memory_profile_torch_cpu_notebook7")


@pytest.mark.e2e
def test_memory_profile_pytorch_in_the_suite_shows_an_allocation_in_the_trace(lab):
    source = (f"import xprof_widgets as xw\n"
              f"suite = xw.Profiler({str(TORCH_CPU)!r}, tool='memory_profile')\nsuite")
    page = lab.show("memory_profile_torch_suite.ipynb", [source], READY)
    assert "Click the timeline" in page.locator(".xw-mp .xw-mp-card").inner_text()
    # An allocation followed by the longest quiet spell: a click inside it picks that one.
    found = harness.run_in_kernel(page, (
        "s = suite.tool('memory_profile').timeline()\n"
        "gap = s['time_us'].diff().shift(-1).where(s['activity'] == 'allocation')\n"
        "k = int(gap.idxmax())\n"
        "print((s['time_us'].iat[k] + gap.iat[k] / 2) / 1000, s['cpu_op'].iat[k], sep='|')"))
    click_ms, op = float(found.split("|")[0]), found.split("|")[1].strip()
    selected = click_to_trace(page, click_ms)
    assert op.startswith("aten::") and op in selected and "[memory]" in selected
