"""Re-running cells in a real kernel keeps one decoded profile (issue 23, item 3).

A Jupyter kernel started from this venv runs `tv = xw.TraceViewer(path); tv` ten times and a
Profiler cell five times, as a user re-running cells would; every displayed widget stays alive
in the kernel (ipywidgets' registry and the `Out` history hold it), so without a shared profile
each run adds a whole decode. Then a cell re-run after each new capture of the file, sent with
its cell id as JupyterLab does: the widget it replaces is closed, or every capture would stay.
The kernel's RSS is read from outside after each cell. Memory, not time, is asserted: the
figures are printed (`pytest -s`).
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
CAPTURES = 5
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


def run_cell(client, code: str, cell_id: str | None = None) -> None:
    """Runs one cell as a notebook does: its last value displayed and kept in `Out`; with
    `cell_id`, the cell's id as JupyterLab sends it (Colab and older front ends send none)."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    request = client.session.msg("execute_request", content,
                                 metadata={"cellId": cell_id} if cell_id else {})
    client.shell_channel.send(request)
    reply = client.get_shell_msg(timeout=CELL_TIMEOUT_S)
    while reply["parent_header"].get("msg_id") != request["header"]["msg_id"]:
        reply = client.get_shell_msg(timeout=CELL_TIMEOUT_S)
    assert reply["content"]["status"] == "ok", "\n".join(reply["content"].get("traceback", []))


def rss_mb(manager) -> float:
    return psutil.Process(manager.provisioner.pid).memory_info().rss / 1e6


def test_rerunning_viewer_cells_keeps_one_profile(kernel, big_profile):
    """Without cell ids nothing is closed: every widget lives, and all share one profile."""
    manager, client = kernel
    run_cell(client, "import xprof_widgets as xw")
    # The Trace Viewer's view asks for a window after it renders, which builds the trace index;
    # `tv.index` stands for that request.
    viewer_cell = f"tv = xw.TraceViewer({big_profile!r}); tv.index; tv"
    rss = []
    for _ in range(RERUNS):
        run_cell(client, viewer_cell)
        rss.append(rss_mb(manager))
    for _ in range(PROFILER_RERUNS):
        run_cell(client, f"xw.Profiler({big_profile!r})")
        rss.append(rss_mb(manager))
    figures = ", ".join(f"{r:.0f}" for r in rss)
    print(f"\nkernel RSS after each cell (MB), {N_EVENTS:.0e} events: {figures}")
    assert rss[-1] <= GROWTH_LIMIT * rss[0], f"RSS grew: {figures} MB"


def test_a_cell_rerun_after_each_capture_keeps_one_profile(kernel, big_profile):
    """The file written again before each run is decoded again; the widget the cell's previous
    run displayed is closed after it (widgets/_reruns.py), and the previous capture goes."""
    manager, client = kernel
    run_cell(client, "import xprof_widgets as xw", cell_id="imports")
    rss = []
    for _ in range(CAPTURES):
        stat = os.stat(big_profile)
        os.utime(big_profile, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        run_cell(client, f"tv = xw.TraceViewer({big_profile!r}); tv.index; tv", cell_id="viewer")
        rss.append(rss_mb(manager))
    figures = ", ".join(f"{r:.0f}" for r in rss)
    print(f"\nkernel RSS after each capture and re-run (MB), {N_EVENTS:.0e} events: {figures}")
    assert rss[-1] <= GROWTH_LIMIT * rss[0], f"RSS grew: {figures} MB"
