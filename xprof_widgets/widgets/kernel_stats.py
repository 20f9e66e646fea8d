"""`KernelStats`: XProf's GPU kernel stats in a notebook cell.

A pie of the kernels with the most time and the table of every kernel by launch parameters and
op (sortable, filterable, Export as CSV). On TPU runs the table lists the custom-call kernels
(Pallas, Mosaic), which XLA has no cost model for.

    ks = xw.KernelStats("/logs/run")
    ks.to_dataframe()          # kernel_name, registers_per_thread, shmem_bytes, block_dim, ...
    ks.to_csv("kernels.csv")
    ks.kernel_breakdown()      # PyTorch traces: time per kernel type and overlap, per rank (HTA)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.kernel_stats import custom_call_kernels, kernel_stats
from ..analysis.kineto.gpu_time import kernel_breakdown
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, handler, jsonable
from ._pies import pie_item
from ._table import CsvExport, columnar


class KernelStats(CsvExport, RequestWidget):
    """Every GPU kernel (or TPU custom-call kernel) with its launch parameters and time.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).
        by_module_name: find an XLA kernel's op through its `hlo_module` name when it carries
            no `program_id` (XProf looks by program id only).
    """

    _bundle = "kernel_stats.js"
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, *, by_module_name: bool = True,
                 **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        table = kernel_stats(profile, by_module_name=by_module_name)
        kind = "GPU" if len(table) else "TPU custom calls" if len(custom_call_kernels(
            profile)) else "none"
        if kind == "TPU custom calls":
            table = custom_call_kernels(profile)
        self.profile = profile
        self._frame = table
        super().__init__(_summary=_summary_of(table, kind, profile.source), **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per kernel (see docs): GPU kernels, or on TPU the custom-call kernels."""
        return self._frame.copy()

    def custom_calls(self) -> pd.DataFrame:
        """TPU custom-call kernels (Pallas, Mosaic): time and occurrences per kernel op."""
        return custom_call_kernels(self.profile)

    def kernel_breakdown(self) -> pd.DataFrame:
        """GPU time per kernel type (COMPUTATION, COMMUNICATION, MEMORY) and overlap of types,
        per rank, as HTA's get_gpu_kernel_breakdown reports it: rank, kernel_type, total_us,
        percentage (analysis/kineto/gpu_time.py). Empty for a profile without Kineto GPU work."""
        return kernel_breakdown(self.profile)

    @handler("table")
    def _table(self) -> dict:
        frame = self._frame
        charts = []
        if len(frame):
            by_kernel = frame.groupby("kernel_name", sort=False)["total_duration_us"].sum()
            item = pie_item(by_kernel, "Kernels by total time")
            if item is not None:
                charts.append({"key": "kernels", "title": "Kernels by total time", "item": item})
        # a Kineto trace's time per kernel type (HTA), shown above the table; [] otherwise
        breakdown = jsonable(kernel_breakdown(self.profile).to_dict("records"))
        return {"rows": columnar(frame), "charts": charts, "breakdown": breakdown}

    def __repr__(self) -> str:
        return (f"<KernelStats {self.profile.source!r} {self._summary['kind']} "
                f"kernels={len(self._frame)}>")


def _summary_of(frame: pd.DataFrame, kind: str, source: str) -> dict:
    total = float(frame["total_duration_us"].sum()) if len(frame) else 0.0
    tensor, known = _tensor_core_time(frame)
    gpu = kind == "GPU"
    return jsonable({"kind": kind, "kernels": len(frame), "total_us": total,
                     "launches": int(frame["occurrences"].sum()) if len(frame) else 0,
                     "tensor_core_share": tensor / known if known and gpu else None,
                     "tensor_core_known_share": known / total if total and gpu else None,
                     "source": source})


def _tensor_core_time(frame: pd.DataFrame) -> tuple[float, float]:
    """(time in kernels that use TensorCores, time in kernels whose use is known): a kernel whose
    name does not say (None, Kineto traces) counts in neither, so the share is of the known
    time rather than calling every unknown kernel a non-TensorCore one."""
    if "is_kernel_using_tensor_core" not in frame or not len(frame):
        return 0.0, 0.0
    flags = frame["is_kernel_using_tensor_core"]
    time = frame["total_duration_us"].to_numpy(np.float64)
    yes = np.array([v is True for v in flags.tolist()], bool)  # tolist: Python bools
    known = ~flags.isna().to_numpy(bool)
    return float(time[yes].sum()), float(time[known].sum())
