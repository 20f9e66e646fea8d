"""Fixtures shared by every test layer: the committed profiles and logdir layouts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
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


@pytest.fixture(autouse=True)
def _fresh_profile_cache():
    """Each test decodes its own profiles: tests patch decoders and settings between opens, and
    a profile an earlier test left alive must not answer for theirs."""
    from xprof_widgets.profile.cache import PROFILES

    PROFILES.clear()
