"""A PyTorch (Kineto) trace in the suite, in JupyterLab and Notebook 7: the Overview draws HTA's
GPU time breakdowns (temporal, kernel types, communication overlapping computation, idle time
by stream) with advice whose button opens the tool it names, and Kernel Stats shows the kernel
breakdown above its table. On nccl_data.json.gz, in exact picoseconds (docs/from_hta.md)."""

from __future__ import annotations

import harness
import pytest

NCCL = harness.REPO / "tests" / "data" / "public" / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
APPS = ["lab", "notebook7"]


def cards(page) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '.xw-overview .xw-ov-card[data-card]')].map((c) => [c.dataset.card, c.innerText]))""")


def selected_tab(page, wanted: str) -> str:
    for _ in range(50):
        shown = harness.run_in_kernel(page, "print(suite.tab_keys[suite.tabs.selected_index])")
        if shown.strip() == wanted:
            break
        page.wait_for_timeout(100)
    return shown.strip()


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_kineto_overview_and_kernel_breakdown(request, app_name):
    app = request.getfixturevalue(app_name)
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(NCCL)!r})\nsuite"]
    page = app.show(f"kineto_overview_{app_name}.ipynb", cells, ".xw-overview .xw-ov-card")
    page.wait_for_selector(".xw-ov-card[data-card='gpu-idle']", timeout=30_000)
    text = cards(page)
    assert "GPU time breakdown" in text["gpu-temporal"]
    assert "77.23%" in text["gpu-temporal"] and "17.66%" in text["gpu-temporal"]
    assert "5.10%" in text["gpu-temporal"]
    kinds = text["gpu-kernel-types"]
    assert "COMPUTATION overlapping COMMUNICATION" in kinds and "74.0%" in kinds
    assert "COMMUNICATION overlapping MEMORY" in kinds and "14.76%" in kinds
    # the families that communicated are named (kernel_families.py), not a fixed "(NCCL)"
    assert "Communication kernels by family: NCCL: 14 kernels, 24.289 ms." in kinds
    assert "Families looked for: NCCL, RCCL, DeepEP" in kinds
    idle = text["gpu-idle"]
    assert "Host wait" in idle and "Kernel wait" in idle
    streams = page.locator(".xw-ov-card[data-card='gpu-idle'] tbody tr td:nth-child(2)")
    assert streams.all_inner_texts() == ["7", "40"]
    assert "GPU idle 77.2% of the time: host-bound" in text["advice"]
    assert "Only 14.8% of communication time overlaps computation" in text["advice"]
    # PyTorch's profiler plugin's step breakdown: a stacked bar per step, its GPU figures
    steps = text["torch-steps"]
    assert "Step time breakdown (PyTorch profiler plugin)" in steps
    bars = page.locator(".xw-ov-card[data-card='torch-steps'] tbody [role='img']")
    assert bars.count() == 3
    assert bars.first.locator("span").count() == 8  # Kernel ... Other, Communication included
    assert "Kernel 38.552 ms (17.3%)" in steps and "Runtime 10.049 ms" in steps
    gpu = page.locator("[data-table='torch-gpu'] tbody td").all_inner_texts()
    assert gpu == ["0", "23.3%", "16.9%", "35.3%"]
    # the view draws what the pandas face returns (Overview.torch_step_breakdown / _gpu_metrics)
    faces = harness.run_in_kernel(page, (
        "from xprof_widgets import Overview\no = Overview(suite.profile)\n"
        "m = o.torch_gpu_metrics().iloc[0]; b = o.torch_step_breakdown()\n"
        "print(f\"{m.gpu_utilization:.1%} {m.est_sm_efficiency:.1%} {m.est_achieved_occupancy_pct:.1f}%\")\n"
        "print(len(b[b.step != 'average']), round(b.kernel_us.iloc[-1] / 1000, 3))")).split("\n")
    assert faces[0] == " ".join(gpu[1:])
    assert faces[1] == f"{bars.count()} 38.552"
    harness.picture(page, page.locator(".xw-overview"), f"overview_kineto_{app_name}")

    advice = page.locator(".xw-ov-advice li", has_text="GPU idle 77.2%")
    button = advice.locator("button.xw-link")
    assert button.inner_text() == "Open Trace Viewer"
    button.click()
    assert selected_tab(page, "trace") == "trace"

    harness.run_in_kernel(page, "suite.show('kernel_stats')")
    app.wait_ready(page, ".xw-ks[data-ready='1']")
    breakdown = page.locator(".xw-ks .xw-ks-kinds")
    breakdown.locator("tbody tr").first.wait_for(timeout=30_000)
    shown = breakdown.inner_text()
    assert "Time by kernel type" in shown
    assert "COMPUTATION overlapping COMMUNICATION" in shown and "3.6%" in shown
    rows = breakdown.locator("tbody tr")
    assert rows.count() == int(harness.run_in_kernel(
        page, "print(len(suite._tools['kernel_stats'].kernel_breakdown()))"))
    harness.picture(page, page.locator(".xw-ks"), f"kernel_stats_kineto_{app_name}")


CPU_ONLY = harness.REPO / "tests" / "data" / "public" / "hta" / "cpu_only" / \
    "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


@pytest.mark.e2e
def test_cpu_only_kineto_overview_has_the_host_parts_only(lab):
    """A CPU-only PyTorch trace: the plugin's breakdown draws its host parts, no GPU figures."""
    cells = [f"import xprof_widgets as xw\nxw.Overview({str(CPU_ONLY)!r})"]
    page = lab.show("kineto_overview_cpu_only.ipynb", cells, ".xw-overview .xw-ov-card")
    card = page.locator(".xw-ov-card[data-card='torch-steps']")
    card.wait_for(timeout=30_000)
    legend = card.locator("[data-legend='torch-steps'] li").all_inner_texts()
    assert [item.split(" ")[0] for item in legend] == ["Communication", "DataLoader", "CPU", "Other"]
    assert card.locator("tbody [role='img'] span").count() == 4
    assert page.locator("[data-table='torch-gpu']").count() == 0
    harness.picture(page, card, "overview_kineto_cpu_only_lab")
