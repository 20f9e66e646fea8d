"""Source stacks (analysis/source.py): from the HLO stack frame index, the `source_stack` stat
and op metadata, on the JAX CPU and TPU fixtures; the lines around a frame read only from a
regular text file on this machine; the Graph and Trace Viewers' `source` requests."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from test_trace_viewer_widget import ask  # tests/unit is on sys.path (prepend import mode)

import xprof_widgets as xw
from xprof_widgets.analysis import source
from xprof_widgets.opening import open_profile
from xprof_widgets.profile.hlo import SourceFrame
from xprof_widgets.profile.schema import HloInstructionProto
from xprof_widgets.widgets._base import STATIC_DIR

ROOT = Path(__file__).resolve().parents[2]
JAX_CPU = ROOT / "tests/data/jax_cpu_demo.xplane.pb"
TPU = ROOT / "tests/data/tpu_v6e_inference.xplane.pb"
TRAIN = "jit_train_step(8)"
"""The demo's training step: its HLO carries a stack frame index (xprof_widgets/demo.py)."""


@pytest.fixture(autouse=True)
def bundles(monkeypatch):
    from xprof_widgets.widgets import graph_viewer, trace_viewer

    for module, cls, bundle in ((graph_viewer, "GraphViewer", "graph_viewer.js"),
                                (trace_viewer, "TraceViewer", "trace_viewer.js")):
        if not (STATIC_DIR / bundle).exists():
            monkeypatch.setattr(getattr(module, cls), "_esm", "export default {}")


@pytest.fixture(scope="module")
def jax_cpu():
    return open_profile(JAX_CPU)


@pytest.fixture(scope="module")
def tpu():
    return open_profile(TPU)


def first_event(profile, name: str) -> int:
    names = profile.display_names[profile.meta]
    return int(np.flatnonzero(names == name)[0])


# ---- the stack ----------------------------------------------------------------------------
def test_stack_from_the_hlo_stack_frame_index_innermost_first(jax_cpu):
    frames = source.op_stack(jax_cpu, TRAIN, "multiply_subtract_fusion")
    demo = "/work/main/xprof_widgets/demo.py"  # where the fixture was made
    assert frames[0] == SourceFrame(demo, 71, 41,
                                    "_train_step_fn.<locals>.train_step.<locals>.<lambda>")
    assert [(f.function, f.line) for f in frames[1:]] == [
        ("_train_step_fn.<locals>.train_step", 71), ("run_demo", 100), ("main", 127),
        ("<module>", 131), ("_run_code", 88), ("_run_module_as_main", 198)]
    assert frames[-1].file == "<frozen runpy>"
    # The module's `source` column stays the innermost frame.
    graph_source = xw.GraphViewer(jax_cpu, op="multiply_subtract_fusion").nodes()
    row = graph_source.set_index("name").loc["multiply_subtract_fusion"]
    assert row["source"] == f"{demo}:71"
    assert row["source_stack"].splitlines() == [f"{f.file}:{f.line}" for f in frames]


def test_every_drawn_node_has_its_innermost_frame_first_in_its_stack(jax_cpu):
    nodes = xw.GraphViewer(jax_cpu, module=TRAIN, op="multiply_subtract_fusion",
                           width=3).nodes()
    stacked = nodes[nodes["source_stack"] != ""]
    assert len(stacked) > 3
    assert (stacked["source_stack"].str.split("\n").str[0] == stacked["source"]).all()
    assert (nodes.loc[nodes["source_stack"] == "", "source"] == "").all()


def test_source_stack_stat_is_read_outermost_first_as_the_tpu_runtime_writes_it(tpu):
    """The TPU fixture's op events carry `source_stack` (a traceback, innermost last) and its
    HLO a stack frame index: both give the same frames in the same order, innermost first."""
    event = first_event(tpu, "broadcast.2")
    stats = tpu.metadata_stats(event)
    assert stats["source_stack"].rstrip().endswith(stats["source"] + ":8")
    from_stat = source.instruction_stack(None, None, stats)
    from_hlo = source.event_stack(tpu, event)
    assert [f.function for f in from_hlo][:2] == ["main", "_run_main"]
    assert [f[:3] for f in from_stat] == [f[:3] for f in from_hlo]
    assert f"{from_stat[0].file}:{from_stat[0].line}" == stats["source"]
    # Written innermost first (as XProf's own test writes it), the order is kept.
    kept = {"source_stack": "a.py:3\nb.py:9", "source": "a.py:3"}
    assert [f.file for f in source.instruction_stack(None, None, kept)] == ["a.py", "b.py"]


def test_metadata_and_source_stat_are_the_last_resorts():
    ins = HloInstructionProto(name="add.1")
    ins.metadata.source_file, ins.metadata.source_line = "model.py", 12
    assert source.instruction_stack(None, ins) == [SourceFrame("model.py", 12)]
    assert source.instruction_stack(None, HloInstructionProto(), {"source": "m.py:4"}) == [
        SourceFrame("m.py", 4)]
    assert source.instruction_stack(None, HloInstructionProto()) == []


def test_parse_stack_reads_file_line_and_column():
    assert source.parse_stack("my_file.py:123\nmy_other_file.py:456:7\nno line\n") == [
        SourceFrame("my_file.py", 123), SourceFrame("my_other_file.py", 456, 7)]
    assert source.parse_stack("C:x/a:b.py:5") == [SourceFrame("C:x/a:b.py", 5)]
    assert source.parse_stack(None) == []


def test_events_that_ran_no_xla_op_have_no_stack(jax_cpu):
    names = jax_cpu.display_names[jax_cpu.meta]
    call = int(np.flatnonzero(names == "PjitFunction(train_step)")[0])
    assert source.event_stack(jax_cpu, call) == []


# ---- the lines ----------------------------------------------------------------------------
@pytest.fixture
def code(tmp_path) -> Path:
    path = tmp_path / "step.py"
    path.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    return path


def test_lines_around_a_frame_where_the_file_is_here(code):
    answer = source.source_lines(SourceFrame(str(code), 10), around=2)
    assert (answer["first"], answer["line"]) == (8, 10)
    assert answer["lines"] == ["line 8", "line 9", "line 10", "line 11", "line 12"]
    assert source.source_lines(SourceFrame(str(code), 1), around=2)["lines"] == [
        "line 1", "line 2", "line 3"]
    past = source.source_lines(SourceFrame(str(code), 40))
    assert "20 lines" in past["missing"] and "changed" in past["missing"]


def test_a_file_that_is_not_here_is_said_to_be_missing():
    gone = source.source_lines(SourceFrame("experimental/users/someone/train.py", 29))
    assert gone == {"file": "experimental/users/someone/train.py", "line": 29,
                    "missing": "not on this machine"}
    assert "no file on disk" in source.source_lines(SourceFrame("<frozen runpy>", 88))["missing"]
    assert "no file and line" in source.source_lines(SourceFrame("", -1))["missing"]


def test_a_name_full_of_html_comes_back_verbatim_and_unread():
    name = "<img src=x onerror=alert(1)>.py"
    answer = source.source_lines(SourceFrame(name, 3))
    assert answer["file"] == name and answer["missing"] == "not on this machine"


def test_binary_large_and_special_files_are_never_shown(tmp_path, monkeypatch):
    blob = tmp_path / "weights.py"
    blob.write_bytes(b"import x\n\0\1\2" * 10)
    assert source.source_lines(SourceFrame(str(blob), 1))["missing"] == (
        "a binary file, not source text")
    assert source.source_lines(SourceFrame(str(tmp_path), 1))["missing"] == (
        "not a regular file here")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 100)
    monkeypatch.setattr(source, "MAX_SOURCE_BYTES", 100)
    assert "too large to show" in source.source_lines(SourceFrame(str(big), 1))["missing"]


def test_a_pipe_is_not_opened_for_reading(tmp_path):
    """A FIFO blocks a plain open() until a writer comes; the answer must come at once."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    answers = []
    reader = threading.Thread(target=lambda: answers.append(
        source.source_lines(SourceFrame(str(fifo), 1))), daemon=True)
    reader.start()
    reader.join(5)
    assert answers == [{"file": str(fifo), "line": 1, "missing": "not a regular file here"}]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_file_says_so(code):
    code.chmod(0)
    assert "permission denied" in source.source_lines(SourceFrame(str(code), 1))["missing"]


# ---- the views' requests ------------------------------------------------------------------
def test_source_answer_clamps_the_frame_and_says_when_there_is_none(code):
    frames = [SourceFrame(str(code), 5, 1, "inner"), SourceFrame("/nowhere/outer.py", 9)]
    answer = source.source_answer(frames, 7, around=1)
    assert answer["frame"] == 1 and answer["missing"] == "not on this machine"
    assert answer["frames"][0] == {"file": str(code), "line": 5, "column": 1,
                                   "function": "inner"}
    first = source.source_answer(frames, around=1)
    assert (first["frame"], first["lines"]) == (0, ["line 4", "line 5", "line 6"])
    assert source.source_answer([])["missing"] == "the profile records no source for this op"


def test_graph_and_trace_viewers_answer_source_requests(jax_cpu):
    graph = xw.GraphViewer(jax_cpu, op="multiply_subtract_fusion")
    answer, _ = ask(graph, "source", module=TRAIN, op="multiply_subtract_fusion", frame=2)
    assert answer["frame"] == 2 and answer["frames"][2]["function"] == "run_demo"
    assert answer["line"] == 100
    trace = xw.TraceViewer(jax_cpu)
    event = int(np.flatnonzero(jax_cpu.stat_column(
        np.arange(jax_cpu.n_events), "hlo_op") == "multiply_subtract_fusion")[0])
    details, _ = ask(trace, "details", event=event)
    assert details["source_stack"] == answer["frames"]
    from_trace, _ = ask(trace, "source", event=event, frame=2)
    assert from_trace == answer


def test_a_gpu_kernel_finds_its_op_by_the_module_name_it_carries():
    """GPU kernel events name their op (`hlo_op`) and module (`hlo_module`) but no program id;
    the synthetic GPU profile's ops have a metadata source and no stack frame index."""
    gpu = open_profile(ROOT / "tests/data/synthetic_gpu.xplane.pb")
    event = int(np.flatnonzero(gpu.stat_column(np.arange(gpu.n_events), "hlo_op")
                               == "fusion.0")[0])
    assert "program_id" not in gpu.event_stats(event)
    assert source.event_stack(gpu, event) == [SourceFrame("model.py", 184)]
