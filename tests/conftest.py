"""Fixtures shared by every test layer: the committed profiles and logdir layouts."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REQUIRE = "XPROF_WIDGETS_REQUIRE_REFERENCES"
"""Set by `make test`: the references the tests compare with must be there, or nothing runs."""
REFERENCES = {  # what the differential and browser tests compare with, and how to get it
    "xprof": ("XProf, the reference for xplanes", "pip install xprof"),
    "hta": ("HolisticTraceAnalysis, the reference for PyTorch traces",
            "pip install holistictraceanalysis"),
    "torch_tb_profiler": ("PyTorch's TensorBoard plugin, the reference for its views",
                          "pip install torch-tb-profiler"),
    "playwright": ("Playwright, which drives the browser tests", "pip install playwright"),
    "marimo": ("marimo, the third notebook the browser tests draw in", "pip install marimo"),
}
CHROMIUM = "/usr/bin/chromium"


def pytest_configure(config):
    """Under `make test` a missing reference is a set-up error, said once, not a skip."""
    if os.environ.get(REQUIRE) != "1":
        return
    missing = [f"{what} ({fix})" for module, (what, fix) in REFERENCES.items()
               if importlib.util.find_spec(module) is None]
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"Chromium at {CHROMIUM}, which the browser tests drive "
                       "(apt-get install -y chromium; `make test` installs it as root)")
    if missing:
        pytest.exit("The tests compare with references that are not installed: "
                    + "; ".join(missing) + ". `make install` installs the Python ones.",
                    returncode=4)
TPU_FIXTURE = DATA / "tpu_v6e_inference.xplane.pb"


@pytest.fixture
def tpu_path() -> Path:
    return TPU_FIXTURE


@pytest.fixture
def make_logdir(tmp_path: Path):
    """Lays files out as LOGDIR/plugins/profile/<run>/<host>.<ext>: {run: {filename: bytes|Path}}."""

    def make(runs: dict[str, dict[str, bytes | Path]]) -> Path:
        logdir = tmp_path / "logdir"
        for run, files in runs.items():
            run_dir = logdir / "plugins" / "profile" / run
            run_dir.mkdir(parents=True, exist_ok=True)
            for name, content in files.items():
                if isinstance(content, Path):
                    shutil.copyfile(content, run_dir / name)
                else:
                    (run_dir / name).write_bytes(content)
        logdir.mkdir(exist_ok=True)
        return logdir

    return make


@pytest.fixture(scope="module")
def dask_client():
    """A Client of a LocalCluster of two worker processes (no dashboard), for one module's pod
    tests; skipped where Dask is not installed."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh_profile_cache():
    """Each test decodes its own profiles: tests patch decoders and settings between opens, and
    a profile an earlier test left alive must not answer for theirs."""
    from xprof_widgets.profile.cache import PROFILES

    PROFILES.clear()
