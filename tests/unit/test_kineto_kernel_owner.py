"""Which host event owns a GPU kernel, copy or set of a PyTorch (Kineto) trace (issue 30 item 4),
and the per-row means of `blocks per SM` and `est. achieved occupancy %` (its kernel view).

One synthetic trace holds a launch of each kind: inside a cpu_op, inside a `record_function`
annotation only, inside a `with_stack` Python function only, under nothing but the profiler's
step, launched through the driver (`cuLaunchKernelEx`) and through HIP, one whose launch call is
not in the trace (found by its External id) and one with neither. Kernel Stats and Framework Op
Stats' device side must name the same owner for each (one rule, `launch_owners`), the device
rows typed by the owner's Kineto category where it is not a cpu_op. Expected values are worked
out by hand below.
"""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_stats import COLUMNS, KINETO_COLUMNS, kernel_stats
from xprof_widgets.analysis.kineto import KERNELS, args_of, events_of
from xprof_widgets.analysis.kineto.kernels import LINKS, launch_owners

HOST, GPU, STREAM = 1, 0, 7
STEP = ("user_annotation", "ProfilerStep#3", 0, 1000)
REGION = ("user_annotation", "my_region", 100, 200)  # [100, 300)
FORWARD = ("python_function", "model.py(12): forward", 400, 200)  # [400, 600)
HOST_EVENTS = [STEP, REGION, FORWARD, ("cpu_op", "aten::mm", 110, 50),
               ("cpu_op", "aten::add", 700, 10)]
# (launch category, launch name, launch start us, correlation, External id, work category,
#  work name, work start us, work duration us, kernel args)
LAUNCHES = [
    ("cuda_runtime", "cudaLaunchKernel", 120, 1, 11, "kernel", "gemm_a", 2000, 10,
     {"blocks per SM": 1.0, "est. achieved occupancy %": 50, "grid": [4, 1, 1]}),
    ("cuda_runtime", "cudaLaunchKernel", 130, 2, 11, "kernel", "gemm_a", 2100, 30,
     {"blocks per SM": 3.0, "est. achieved occupancy %": 10, "grid": [4, 1, 1]}),
    ("cuda_runtime", "cudaLaunchKernel", 200, 3, 12, "kernel", "region_kernel", 2200, 20,
     {"blocks per SM": 0.5, "grid": [2, 1, 1]}),  # occupancy not stated
    ("cuda_runtime", "cudaMemcpyAsync", 250, 4, 12, "gpu_memcpy", "Memcpy HtoD", 2300, 5, {}),
    ("cuda_driver", "cuLaunchKernelEx", 450, 5, 0, "kernel", "triton_fused", 2400, 40,
     {"grid": [8, 1, 1]}),  # no blocks per SM: 8 blocks over 4 SMs = 2
    ("cuda_runtime", "cudaLaunchKernel", 650, 6, 0, "kernel", "bare_kernel", 2500, 8,
     {"est. achieved occupancy %": 25}),
    ("cuda_runtime", "hipExtModuleLaunchKernel", 660, 7, 0, "kernel", "Cijk_amd", 2600, 6,
     {}),  # nothing stated: both means unknown
]
LOST = [("kernel", "found_by_external_id", 2700, 4, 99, 13),  # (..., correlation, External id)
        ("kernel", "orphan", 2800, 2, 98, 77)]
EXTERNAL_OP = ("cpu_op", "aten::add", 13)


def _trace() -> dict:
    events = [{"ph": "M", "name": "process_name", "pid": HOST, "args": {"name": "python"}},
              {"ph": "M", "name": "process_name", "pid": GPU, "args": {"name": "GPU 0"}}]
    for category, name, start, length in HOST_EVENTS:
        args = {"External id": EXTERNAL_OP[2]} if name == EXTERNAL_OP[1] else {}
        events.append({"ph": "X", "cat": category, "name": name, "pid": HOST, "tid": HOST,
                       "ts": start, "dur": length, "args": args})
    for (call_cat, call, at, corr, ext, cat, name, start, length, extra) in LAUNCHES:
        events.append({"ph": "X", "cat": call_cat, "name": call, "pid": HOST, "tid": HOST,
                       "ts": at, "dur": 4, "args": {"correlation": corr, "External id": ext}})
        events.append({"ph": "X", "cat": cat, "name": name, "pid": GPU, "tid": STREAM,
                       "ts": start, "dur": length, "args": {
                           "correlation": corr, "External id": ext, "device": GPU,
                           "stream": STREAM, "block": [128, 1, 1], **extra}})
    for cat, name, start, length, corr, ext in LOST:
        events.append({"ph": "X", "cat": cat, "name": name, "pid": GPU, "tid": STREAM,
                       "ts": start, "dur": length, "args": {
                           "correlation": corr, "External id": ext, "device": GPU,
                           "stream": STREAM, "grid": [1, 1, 1], "block": [1, 1, 1]}})
    # the GPU's copy of the region: device-side, never an owner
    events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "my_region", "pid": GPU,
                   "tid": STREAM, "ts": 2000, "dur": 900, "args": {}})
    return {"deviceProperties": [{"id": GPU, "name": "Synthetic GPU", "numSms": 4}],
            "traceEvents": events}


OWNERS = {  # work name -> (owner, its category), by the rule
    "gemm_a": ("aten::mm", "cpu_op"),  # a cpu_op inside the annotation: the cpu_op
    "region_kernel": ("my_region", "user_annotation"),
    "Memcpy HtoD": ("my_region", "user_annotation"),
    "triton_fused": ("model.py(12): forward", "python_function"),
    "bare_kernel": ("cudaLaunchKernel", "cuda_runtime"),  # ProfilerStep#3 owns nothing
    "Cijk_amd": ("hipExtModuleLaunchKernel", "cuda_runtime"),
    "found_by_external_id": ("aten::add", "cpu_op"),
    "orphan": ("", ""),
}


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("owner") / "owner.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    return xw.open_profile(path)


def test_each_piece_of_work_gets_its_owner(profile):
    work = events_of(profile, (*KERNELS, "gpu_memcpy"), "device")
    owners = launch_owners(profile, work, args_of(profile, work, LINKS))
    got = {str(profile.display_names[profile.meta[w]]): (owners.names[c], owners.categories[c])
           for w, c in zip(work.tolist(), owners.code.tolist(), strict=True)}
    assert got == OWNERS


def test_kernel_stats_names_the_owner_and_its_category(profile):
    table = kernel_stats(profile)
    assert table.columns.tolist() == COLUMNS + KINETO_COLUMNS
    got = {r.kernel_name: (r.op_name, r.op_category) for r in table.itertuples(index=False)}
    assert got == {k: v for k, v in OWNERS.items() if k != "Memcpy HtoD"}


def test_device_rows_are_typed_by_the_owners_category(profile):
    table = xw.FrameworkOpStats(profile).to_dataframe()
    device = table[(table["host_or_device"] == "Device") & (table["type"] != "IDLE")]
    got = {r.operation: (r.type, r.occurrences, round(r.total_time_us * 1e6))
           for r in device.itertuples(index=False)}
    assert got == {
        "aten::mm": ("aten", 2, 40 * 10**6),
        "my_region": ("user_annotation", 2, 25 * 10**6),  # a kernel and a copy
        "model.py(12): forward": ("python_function", 1, 40 * 10**6),
        "cudaLaunchKernel": ("cuda_runtime", 1, 8 * 10**6),
        "hipExtModuleLaunchKernel": ("cuda_runtime", 1, 6 * 10**6),
        "aten::add": ("aten", 1, 4 * 10**6),
        "orphan": ("Unknown", 1, 2 * 10**6),  # no launch, no op: the work as itself
    }


def test_means_are_weighted_by_duration_and_unknown_where_not_stated(profile):
    rows = kernel_stats(profile).set_index("kernel_name")
    bps, occupancy = rows["mean_blocks_per_sm"], rows["mean_est_achieved_occupancy_pct"]
    assert bps["gemm_a"] == pytest.approx((1.0 * 10 + 3.0 * 30) / 40)  # 2.5
    assert occupancy["gemm_a"] == pytest.approx((50 * 10 + 10 * 30) / 40)  # 20
    assert bps["region_kernel"] == pytest.approx(0.5)
    assert math.isnan(occupancy["region_kernel"])  # not stated: unknown, not 0
    assert bps["triton_fused"] == pytest.approx(8 / 4)  # grid over deviceProperties' numSms
    assert math.isnan(bps["bare_kernel"]) and occupancy["bare_kernel"] == 25
    assert np.isnan(rows.loc["Cijk_amd", ["mean_blocks_per_sm",
                                          "mean_est_achieved_occupancy_pct"]]).all()
    # the first launch's occupancy stays where XProf keeps it
    assert rows.loc["gemm_a", "occupancy_pct"] == 50


def test_a_mean_of_kernels_that_lasted_no_time_is_their_plain_mean(tmp_path):
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "instant", "pid": GPU, "tid": STREAM, "ts": t,
         "dur": 0, "args": {"est. achieved occupancy %": v, "blocks per SM": v / 10,
                            "device": GPU, "stream": STREAM}}
        for t, v in ((10, 20), (20, 40))]}
    path = tmp_path / "instant.json"
    path.write_text(json.dumps(trace))
    row = kernel_stats(xw.open_profile(path)).iloc[0]
    assert row["mean_est_achieved_occupancy_pct"] == pytest.approx(30)
    assert row["mean_blocks_per_sm"] == pytest.approx(3)
    assert row["op_category"] == "" and row["op_name"] == ""
