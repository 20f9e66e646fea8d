"""The tools read their formats through `FormatPart` (analysis/parts.py): each format's part sits in
its own place (XSpace's in the tool's module, Kineto's in analysis/kineto/), and a profile is
read by the parts of the format it was written in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis import framework_op_stats, kernel_stats, memory_profile, roofline_model
from xprof_widgets.analysis.parts import FormatPart, first_present, present

DATA = Path(__file__).resolve().parents[1] / "data"
SIMPLE_ADD = ("public/hta/critical_path/simple_add/"
              "benchmark_result_493459_1694039959_trace.json.gz")  # HTA's: a GPU run
TOOLS = {module.__name__.rpartition(".")[2]: module.FORMATS
         for module in (kernel_stats, memory_profile, framework_op_stats, roofline_model)}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_each_part_sits_in_its_formats_place(tool):
    parts = TOOLS[tool]
    assert len({p.format for p in parts}) == len(parts) > 1
    for part in parts:
        home = ("xprof_widgets.analysis.kineto." if part.format == "kineto"
                else f"xprof_widgets.analysis.{tool}")
        assert part.read.__module__.startswith(home), (tool, part.format, part.read.__module__)
        # module-level, so a Dask worker finds it by name
        assert getattr(sys.modules[part.read.__module__], part.read.__name__) is part.read


@pytest.mark.parametrize("fixture, tool, formats", [
    ("synthetic_gpu.xplane.pb", "kernel_stats", ["xspace"]),
    (SIMPLE_ADD, "kernel_stats", ["kineto"]),
    ("synthetic_gpu_allocator.xplane.pb", "memory_profile", ["xspace"]),
    ("torch_memory_no_addr/trace.json.gz", "memory_profile", ["kineto"]),
    (SIMPLE_ADD, "framework_op_stats", ["kineto", "xspace"]),
    ("tpu_v6e_inference.xplane.pb", "framework_op_stats", ["xspace"]),
    ("tpu_v6e_inference.xplane.pb", "roofline_model", ["xspace"]),
    ("torch_self_time/trace.json.gz", "roofline_model", []),  # a CPU run: no GPU, no roofline
])
def test_a_profile_is_read_by_its_formats_parts(fixture, tool, formats):
    profile = xw.open_profile(DATA / fixture)
    assert [p.format for p in present(profile, TOOLS[tool])] == formats


def test_memory_profile_draws_what_its_part_read():
    kineto = memory_profile.analyze_memory_profile(
        xw.open_profile(DATA / "torch_memory_no_addr/trace.json.gz"))
    xspace = memory_profile.analyze_memory_profile(
        xw.open_profile(DATA / "synthetic_gpu_allocator.xplane.pb"))
    assert (kineto.kind, xspace.kind) == ("kineto", "allocator")
    assert kineto.allocators and xspace.allocators


def test_the_first_part_present_is_the_tools_choice():
    def no(profile):
        return False

    def yes(profile):
        return True

    parts = (FormatPart("a", no, str), FormatPart("b", yes, repr), FormatPart("c", yes, ascii))
    assert [p.format for p in present(None, parts)] == ["b", "c"]
    assert first_present(None, parts).format == "b"
    assert first_present(None, parts[:1]) is None
