"""Whether a Kineto kernel runs on TensorCores, by family (analysis/kernel_families.py, issue 30
item 5): yes / no / unknown, a name per family (from the public traces under tests/data where
they hold one, else as the library writes it), Kernel Stats' column and its "TensorCore kernels"
share on a small trace, and XProf's own rule kept on xplanes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_families import (
    NO,
    TENSOR_CORE_FAMILIES,
    UNKNOWN,
    YES,
    tensor_core_family,
    tensor_core_use,
)
from xprof_widgets.analysis.kernel_stats import kernel_stats
from xprof_widgets.analysis.tensor_core import uses_tensor_core

FP8_SM90 = ("void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_"
            "128x128x128_1x1x1_0_tnn_align16_warpspecialized_cooperative_fp8_fastaccum_epi_tma>"
            "(cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_128x128x128::Params)")
FAMILY_NAMES = {
    # real: HTA's test traces (tests/data/public/hta)
    "XProf's list": [("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>"
                     "(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)"),
                     ("sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize"
                     "2x1x1_execute_segment_k_off_kernel__5x_cublas")],
    "Hopper/Blackwell MMA (wgmma, gmma, tcgen05)": [
        ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
        "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
        "MainloopSm90TmaGmmaWarpSpecializedFP8<4, cute::tuple<cute::C<2>>>>>>"),
        "void flashinfer::sm100_umma_gemm<__nv_fp8_e4m3>()"],
    "cuBLAS/cuDNN xmma and nvjet": [
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128"
        "x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"),  # real
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN"],
    "CUTLASS tensorop / wmma": [
        FP8_SM90,
        ("void cutlass::Kernel<cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8>"
        "(cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8::Params)")],  # real
    "Integer / FP64 MMA (imma, dmma)": ["turing_imma_int8_gemm_64x64", "ampere_dmma_gemm_64x64_nn"],
    "AMD MFMA (hipBLASLt/Tensile Cijk, CK xdl)": [
        ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_"
        "ASEM1_CLR1_CADS0_EPS0_GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0"),  # real (MI250)
        "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<>>()"],
    "FlashAttention / fused MHA": [
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::half_t>, false, true>(Flash_fwd_params)"),
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<>()",
        "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<>)"],
    "SIMT GEMM / convolution": [
        "ampere_sgemm_128x128_tn", "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",  # real
        "void cutlass::Kernel<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>()"],
    "PyTorch elementwise / reduce / copy": [
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1>)"),
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>()"],
    "PyTorch normalization / softmax / pooling": [
        ("void (anonymous namespace)::softmax_warp_backward<float, float, float, 1, false, false>"
        "(float*, float const*, float const*, int, int, int, bool const*)")],  # real
    "Embedding / index bookkeeping": [
        ("void bounds_check_indices_kernel<long>(at::GenericPackedTensorAccessor<long, 1ul, "
        "at::RestrictPtrTraits, int>)")],  # real
    "CUB / Thrust primitives": [
        ("void cub::DeviceScanInitKernel<cub::ScanTileState<int, true> >(cub::ScanTileState<int, "
        "true>, int)")],  # real
    "cuDNN / cuBLAS helper kernels": [
        ("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>"
        "(cudnn::bn_fw_tr_1C11_args<float>)"),  # real
        "void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long)"],
}
UNKNOWN_NAMES = ["triton__0d1d2d3d", "at::cuda::(anonymous namespace)::spin_kernel(long)",
                 "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
                 "void my_custom_kernel(float*)"]


def test_every_family_is_tested_sourced_and_documented():
    assert [f.name for f in TENSOR_CORE_FAMILIES] == list(FAMILY_NAMES)
    assert all(f.source and f.verdict in (YES, NO) for f in TENSOR_CORE_FAMILIES)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "pytorch.md").read_text()
    assert all(f"| {f.name} |" in docs for f in TENSOR_CORE_FAMILIES)


@pytest.mark.parametrize(("family", "name"),
                         [(f, n) for f, ns in FAMILY_NAMES.items() for n in ns])
def test_each_family_decides(family, name):
    verdict = next(f.verdict for f in TENSOR_CORE_FAMILIES if f.name == family)
    assert tensor_core_family(name) == (verdict, family)


@pytest.mark.parametrize("name", UNKNOWN_NAMES)
def test_a_name_that_does_not_say_is_unknown(name):
    assert tensor_core_use(name) == UNKNOWN


def test_communication_kernels_are_not_tensor_core_kernels():
    assert tensor_core_family("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") == (NO, "NCCL")
    assert tensor_core_family("void deep_ep::intranode::dispatch<8>()") == (NO, "DeepEP")


def test_the_xplane_rule_stays_xprofs():
    """XProf's list reads the sm90 FP8 CUTLASS GEMM as no; only the Kineto path reads wider."""
    assert not uses_tensor_core(FP8_SM90) and not uses_tensor_core("triton__0d1d2d3d")
    assert uses_tensor_core(FAMILY_NAMES["XProf's list"][0])


def _trace(tmp_path: Path, kernels: list[tuple[str, float]]) -> Path:
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
              {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}}]
    ts = 1000.0
    for k, (name, dur) in enumerate(kernels):
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
                       "dur": dur, "args": {"stream": 7, "device": 0, "correlation": k + 1,
                                            "grid": [1, 1, 1], "block": [128, 1, 1]}})
        ts += dur + 10
    path = tmp_path / "tc.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_kernel_stats_shows_unknown_and_shares_the_known_time(tmp_path):
    elementwise = FAMILY_NAMES["PyTorch elementwise / reduce / copy"][0]
    profile = xw.open_profile(_trace(tmp_path, [
        (FP8_SM90, 100.0), (elementwise, 50.0), ("triton__0d1d2d3d", 50.0)]))
    table = kernel_stats(profile).set_index("kernel_name")
    assert table.loc[FP8_SM90, "is_kernel_using_tensor_core"] is True
    assert table.loc[elementwise, "is_kernel_using_tensor_core"] is False
    assert table.loc["triton__0d1d2d3d", "is_kernel_using_tensor_core"] is None
    assert table.loc[FP8_SM90, "is_op_tensor_core_eligible"]
    summary = xw.KernelStats(profile)._summary
    assert summary["tensor_core_share"] == pytest.approx(100 / 150)  # of the known time
    assert summary["tensor_core_known_share"] == pytest.approx(150 / 200)


def test_all_known_keeps_a_boolean_column(tmp_path):
    profile = xw.open_profile(_trace(tmp_path, [(FP8_SM90, 10.0), ("ampere_sgemm_128x128_tn", 30.0)]))
    table = kernel_stats(profile)
    assert table["is_kernel_using_tensor_core"].dtype == bool
    summary = xw.KernelStats(profile)._summary
    assert summary["tensor_core_share"] == pytest.approx(0.25)
    assert summary["tensor_core_known_share"] == pytest.approx(1.0)
