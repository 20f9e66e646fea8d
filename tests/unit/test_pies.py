"""Pie items (widgets/_pies.py): the slices travel whole, for the view's HTML legend to cut."""

import json

import pandas as pd

from xprof_widgets.widgets._pies import OTHER, SLICES, pie_item

GEMM = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>("
        "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)")


def test_the_legend_carries_full_names_and_bokeh_draws_none():
    values = pd.Series({GEMM: 60.0, "aten::add": 30.0, "aten::mul": 10.0})
    item = pie_item(values, "Kernels by total time")
    assert item["legend"] == [
        {"name": GEMM, "share": "60.0%", "value": "60.000 µs", "color": "#1f77b4"},
        {"name": "aten::add", "share": "30.0%", "value": "30.000 µs", "color": "#ff7f0e"},
        {"name": "aten::mul", "share": "10.0%", "value": "10.000 µs", "color": "#2ca02c"},
    ]
    assert '"Legend"' not in json.dumps(item["doc"])  # the view draws it, cut as its tables cut


def test_slices_past_the_largest_become_other():
    values = pd.Series({f"op{i}": float(100 - i) for i in range(SLICES + 3)})
    legend = pie_item(values, "t")["legend"]
    assert [s["name"] for s in legend] == [*(f"op{i}" for i in range(SLICES)), OTHER]
    assert legend[-1]["value"] == f"{sum(100 - i for i in range(SLICES, SLICES + 3)):,.3f} µs"
    assert pie_item(pd.Series({"only": 1.0}), "t") is None
