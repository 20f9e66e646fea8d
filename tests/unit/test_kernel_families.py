"""Which GPU kernels communicate, by family (analysis/kernel_families.py, issue 30 item 2): a
name per family (NCCL's from a real trace, the others as their libraries write them), the
GPU time breakdowns and the Overview on a small Kineto trace where DeepEP and symmetric-memory
kernels run beside a GEMM, and where our wider rule and HTA's `^nccl.*Kernel` part."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_families import (
    COMMUNICATION_FAMILIES,
    communication_family,
    is_communication,
)
from xprof_widgets.analysis.kineto.gpu_time import (
    comm_comp_overlap,
    communication_by_family,
    gpu_work_events,
    hta_kernel_type,
    kernel_breakdown,
    kernel_type,
)
from xprof_widgets.analysis.kineto.overview import gpu_breakdowns
from xprof_widgets.analysis.step_breakdown import device_levels

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
HTA_NCCL = PUBLIC / "hta" / "nccl_parser_config" / "nccl_data.json.gz"

NAMES = {
    "NCCL": ["ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
             "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
             "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"],
    "RCCL": ["rccl_all_reduce_kernel<float>"],
    "DeepEP": ["void dpsk::ep::intranode::dispatch<8, 768, 8192>(int4*, float*)",
               "void dpsk::ep::internode::combine<__nv_bfloat16, 8>(int4*)",
               "void deep_ep::internode_ll::dispatch<false, 7168>(void*, int*)"],
    "Symmetric memory": ["void c10d::symmetric_memory::multimem_all_reduce_kernel<bf16, 16>()",
                         "two_shot_all_reduce_kernel_0d1d2d3d4d5d",
                         "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>()"],
    "NVSHMEM": ["nvshmemi_proxy_progress_kernel", "void nvshmem_barrier_all_kernel()"],
    "Custom all-reduce / all-to-all": [
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
        "void vllm::cross_device_reduce_2stage<half, 4>(vllm::RankData*)",
        "all_to_all_dispatch_kernel", "void moe::AllToAllCombineKernel<bf16>()",
        "void tensorrt_llm::kernels::oneShotAllReduceKernel<half, 8>()"],
}
NOT_COMMUNICATION = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
    "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
    "triton_red_fused_all_0", "Memcpy HtoD (Pageable -> Device)"]


def test_every_family_is_documented_and_named():
    assert [f.name for f in COMMUNICATION_FAMILIES] == list(NAMES)
    assert all(f.source for f in COMMUNICATION_FAMILIES)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "pytorch.md").read_text()
    assert all(f"| {f.name} |" in docs for f in COMMUNICATION_FAMILIES)


@pytest.mark.parametrize(("family", "name"), [(f, n) for f, ns in NAMES.items() for n in ns])
def test_a_kernel_of_each_family_communicates(family, name):
    assert communication_family(name) == family
    assert kernel_type(name) == "COMMUNICATION"


@pytest.mark.parametrize("name", NOT_COMMUNICATION)
def test_compute_and_copies_do_not(name):
    assert not is_communication(name)
    assert kernel_type(name) == hta_kernel_type(name)


def test_hta_types_only_nccl_as_communication():
    """The documented difference (docs/from_hta.md): HTA counts DeepEP, symmetric memory and
    the others as computation; on NCCL kernels the two rules agree."""
    for family, names in NAMES.items():
        for name in names:
            expected = "COMMUNICATION" if name.startswith("nccl") else "COMPUTATION"
            assert hta_kernel_type(name) == expected, (family, name)


def _kernel_names(path: Path) -> set[str]:
    """The names of a Kineto trace's `kernel` events, read straight from its JSON."""
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return {str(e.get("name")) for e in events
            if isinstance(e, dict) and e.get("cat") in ("kernel", "Kernel")}


def test_hta_parity_traces_have_no_kernel_the_rules_part_on():
    """So the HTA parity test (tests/differential/test_hta_parity.py) needs no rule for the
    wider communication families: on every public Kineto trace both rules type each kernel
    alike."""
    parted, nccl = [], 0
    for path in sorted(PUBLIC.rglob("*.json*")):
        try:
            names = _kernel_names(path)
        except (ValueError, OSError, AttributeError):
            continue  # not a trace (HTA's test data holds two such files)
        nccl += sum(n.startswith("nccl") for n in names)
        parted += [(path.name, n) for n in names if kernel_type(n) != hta_kernel_type(n)]
    assert nccl and parted == []


def test_hta_work_events_of_a_real_nccl_trace_agree_and_annotations_keep_htas_type():
    profile = xw.open_profile(HTA_NCCL)
    rows = profile.meta[gpu_work_events(profile)]
    names = set(profile.metadata["name"].to_numpy(dtype=object)[rows].astype(str))
    assert any(n.startswith("ncclKernel") for n in names)
    assert [n for n in names if kernel_type(n) != hta_kernel_type(n)] == []
    assert kernel_type("nccl:all_reduce", "gpu_user_annotation") == "COMPUTATION"  # as HTA


def _trace(tmp_path: Path, kernels: list[tuple[str, int, float, float]]) -> Path:
    """A Kineto trace with one GPU process: (name, stream, ts, dur) per kernel."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
              {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
              {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}}]
    for k, (name, stream, ts, dur) in enumerate(kernels):
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                       "ts": ts, "dur": dur,
                       "args": {"stream": stream, "device": 0, "correlation": k + 1}})
    path = tmp_path / "ep.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


GEMM = NOT_COMMUNICATION[1]
DISPATCH = NAMES["DeepEP"][0]
MULTIMEM = NAMES["Symmetric memory"][0]


@pytest.fixture
def moe(tmp_path):
    return xw.open_profile(_trace(tmp_path, [
        (GEMM, 7, 1000.0, 100.0), (DISPATCH, 20, 1050.0, 100.0), (MULTIMEM, 20, 1200.0, 20.0),
        (DISPATCH, 20, 1300.0, 50.0)]))


def test_deepep_and_symmetric_memory_are_communication_in_the_breakdowns(moe):
    kinds = kernel_breakdown(moe).set_index("kernel_type")["total_us"].to_dict()
    assert kinds == pytest.approx({"COMMUNICATION": 120.0, "COMPUTATION": 50.0,
                                   "COMPUTATION overlapping COMMUNICATION": 50.0})
    overlap = comm_comp_overlap(moe).iloc[0]
    assert overlap["communication_us"] == pytest.approx(170.0)
    assert overlap["overlap_us"] == pytest.approx(50.0)


def test_the_families_that_ran_are_named(moe):
    families = communication_by_family(moe)
    assert families["family"].tolist() == ["DeepEP", "Symmetric memory"]
    assert families["kernels"].tolist() == [2, 1]
    assert families["total_us"].tolist() == pytest.approx([150.0, 20.0])
    gpu = gpu_breakdowns(moe)
    assert [r["family"] for r in gpu["communication"]] == ["DeepEP", "Symmetric memory"]
    assert gpu["communication_families"] == list(NAMES)


def test_without_communication_the_overview_says_what_it_looked_for(tmp_path):
    profile = xw.open_profile(_trace(tmp_path, [(GEMM, 7, 1000.0, 100.0)]))
    gpu = gpu_breakdowns(profile)
    assert gpu["communication"] == [] and "DeepEP" in gpu["communication_families"]


def test_step_breakdown_counts_them_as_collectives(moe):
    from xprof_widgets.analysis.step_breakdown import _LEVEL

    levels = device_levels(moe)
    by_name = dict(zip(moe.metadata["name"].astype(str), levels.tolist(), strict=True))
    assert by_name[DISPATCH] == by_name[MULTIMEM] == _LEVEL["collectives_us"]
    assert by_name[GEMM] == _LEVEL["compute_us"]
