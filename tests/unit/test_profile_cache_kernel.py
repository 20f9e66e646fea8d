"""Re-running a cell in a real kernel keeps one decoded profile (issue 23, item 3).

A Jupyter kernel started from this venv runs `tv = xw.TraceViewer(path); tv` ten times and a
Profiler cell five times, as a user re-running cells would; every displayed widget stays alive
in the kernel (ipywidgets' registry and the `Out` history hold it), so without a shared profile
each run adds a whole decode. The kernel's RSS is read from outside after each cell. Memory, not
time, is asserted: the figures are printed (`pytest -s`).
"""

from __future__ import annotations

import os

import pytest

from xprof_widgets.synthetic import write_synthetic

jupyter_client = pytest.importorskip("jupyter_client")
psutil = pytest.importorskip("psutil")
pytest.importorskip("ipykernel")

N_EVENTS = 5_000_000
RERUNS = 10
PROFILER_RERUNS = 5
GROWTH_LIMIT = 1.25
CELL_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def big_profile(tmp_path_factory) -> str:
    return os.fspath(write_synthetic(tmp_path_factory.mktemp("kernel") / "big.xplane.pb",
                                     N_EVENTS))


@pytest.fixture
def kernel():
    manager = jupyter_client.KernelManager(kernel_name="python3")  # runs sys.executable
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run_cell(client, code: str) -> None:
    """Runs one cell as the notebook does (its last value displayed, kept in `Out`)."""
    errors: list[str] = []

    def collect(message: dict) -> None:
        if message["msg_type"] == "error":
            errors.append("\n".join(message["content"]["traceback"]))

    reply = client.execute_interactive(code, timeout=CELL_TIMEOUT_S, output_hook=collect)
    assert reply["content"]["status"] == "ok", "\n".join(errors) or reply["content"]


def test_rerunning_viewer_cells_keeps_one_profile(kernel, big_profile):
    manager, client = kernel
    process = psutil.Process(manager.provisioner.pid)
    run_cell(client, "import xprof_widgets as xw")
    # The Trace Viewer's view asks for a window after it renders, which builds the trace index;
    # `tv.index` stands for that request.
    viewer_cell = f"tv = xw.TraceViewer({big_profile!r}); tv.index; tv"
    rss_mb = []
    for _ in range(RERUNS):
        run_cell(client, viewer_cell)
        rss_mb.append(process.memory_info().rss / 1e6)
    for _ in range(PROFILER_RERUNS):
        run_cell(client, f"xw.Profiler({big_profile!r})")
        rss_mb.append(process.memory_info().rss / 1e6)
    figures = ", ".join(f"{r:.0f}" for r in rss_mb)
    print(f"\nkernel RSS after each cell (MB), {N_EVENTS:.0e} events: {figures}")
    assert rss_mb[-1] <= GROWTH_LIMIT * rss_mb[0], f"RSS grew: {figures} MB"
