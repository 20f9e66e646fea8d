"""Test-only widget on the real plumbing (RequestWidget, transport.js, charts/bokeh.js).

Its front end is tests/e2e/echo_widget.js, bundled by the `echo_bundle` fixture into
tests/e2e/artifacts/ before any notebook imports this module.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import traitlets
from bokeh.embed import json_item

from xprof_widgets.errors import ProfileError
from xprof_widgets.widgets._base import RequestWidget, handler


class EchoWidget(RequestWidget):
    _esm = Path(__file__).resolve().parent / "artifacts" / "echo_widget.js"
    n = traitlets.Int(0).tag(sync=True)

    @handler("numbers")
    def _numbers(self, n: int) -> tuple[dict, list]:
        i = np.arange(n, dtype=np.uint64)
        return {"n": n}, [(i * 2654435761 % 2**32).astype(np.uint32)]

    @handler("echo")
    def _echo(self, **params: object) -> dict:
        return params

    @handler("sleep")
    def _sleep(self, seconds: float) -> dict:
        time.sleep(seconds)
        return {"slept": seconds}

    @handler("fail")
    def _fail(self) -> dict:
        raise ProfileError("echo: asked to fail")

    @handler("chart")
    def _chart(self) -> dict:
        from bokeh.layouts import row
        from bokeh.models import ColumnDataSource, DataTable, TableColumn
        from bokeh.plotting import figure

        source = ColumnDataSource(
            {
                "op": ["fusion.3", "convolution.1", "all-reduce", "copy.7"],
                "ms": [4.1, 2.7, 1.3, 0.4],
            }
        )
        chart = figure(
            y_range=list(reversed(source.data["op"])),
            width=420,
            height=220,
            title="echo widget: time per op",
            toolbar_location=None,
        )
        chart.hbar(y="op", right="ms", height=0.7, source=source, color="#4e79a7")
        chart.xaxis.axis_label = "ms"
        table = DataTable(
            source=source,
            width=240,
            height=220,
            columns=[TableColumn(field="op", title="op"), TableColumn(field="ms", title="ms")],
        )
        return {"item": json_item(row(chart, table))}
