"""Every notebook in notebooks/ runs top to bottom without an error (nbclient, a real kernel)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def demo_logdir(tmp_path_factory):
    """The committed demo profile as a logdir, so the notebooks need not run the demo."""
    run = tmp_path_factory.mktemp("demo") / "plugins" / "profile" / "2026_11_29_00_00_00"
    run.mkdir(parents=True)
    shutil.copyfile(REPO / "tests" / "data" / "jax_cpu_demo.xplane.pb", run / "vm.xplane.pb")
    return run.parents[2]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, demo_logdir, tmp_path, monkeypatch):
    monkeypatch.setenv("XPROF_DEMO_LOGDIR", str(demo_logdir))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for cell in notebook.cells if cell.cell_type == "code"
              for o in cell.outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert not errors, errors
    assert not list(tmp_path.glob("demo_logdir")), "the notebook made its own demo profile"
