"""Rows no metadata names read by what the trace says of them, never `Process ` / `Thread `
with nothing after (issue 30: the Trace Viewer on torch-tb-profiler's ResNet50 sample)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xprof_widgets as xw

pytestmark = pytest.mark.decoding
RESNET50 = (Path(__file__).parents[1] / "data" / "public" / "torch_tb_plugin"
            / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz")


def _rows(profile: xw.Profile) -> set[tuple[str, str]]:
    tracks = profile.file_tracks
    return set(zip(tracks["section"], tracks["name"], strict=True))


def test_resnet50_sample_rows_are_all_named() -> None:
    """Kineto (2021) writes its trace span under pid `Traces` and a global-scope instant
    (`Record Window End`) with pid and tid "": they read `Traces` and `Global`, and the GPU
    stream no thread_name names reads as Kineto calls it."""
    profile = xw.open_profile(RESNET50)
    rows = _rows(profile)
    assert rows == {("python (0) GPU 0", "stream 7"), ("Global", "Global"),
                    ("python (25738)", "thread 25738 (python)"),
                    ("python (25738)", "thread 25772 (python)"),
                    ("Traces", "PyTorch Profiler"), ("Traces", "Trace PyTorch Profiler")}
    assert (profile.file_tracks["n_events"] > 0).all()
    # the trace's own markers after its processes, not between the GPU and the host
    order = list(dict.fromkeys(profile.file_tracks["section"]))
    assert set(order[-2:]) == {"Global", "Traces"}, order


def test_unnamed_numbers_keep_their_kind(tmp_path) -> None:
    """A numbered process or thread with no name still says what it is; an empty
    process_name or thread_name counts as none."""
    events = [{"ph": "M", "pid": 3, "tid": 4, "name": "thread_name", "args": {"name": ""}},
              {"ph": "X", "pid": 3, "tid": 4, "name": "a", "ts": 1, "dur": 2},
              {"ph": "X", "pid": "", "tid": "", "name": "b", "ts": 1, "dur": 2}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert _rows(xw.open_profile(path)) == {("Process 3", "Thread 4"), ("Global", "Global")}
