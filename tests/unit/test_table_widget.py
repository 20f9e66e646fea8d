"""The Python half of the shared table: columnar JSON for the view and CSV files."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from xprof_widgets.widgets._table import CsvExport, columnar


def test_columnar_keeps_order_and_makes_missing_values_null():
    frame = pd.DataFrame({"a": [1.5, math.nan, np.inf], "b": ["x", "y", "z"],
                          "c": np.array([1, 2, 3], np.int64), "d": [True, False, True]})
    out = columnar(frame, ["b", "a", "c", "d"])
    assert list(out) == ["b", "a", "c", "d"]
    assert out["a"] == [1.5, None, None]
    assert out["c"] == [1, 2, 3] and all(type(v) is int for v in out["c"])
    assert out["d"] == [True, False, True]
    assert list(columnar(frame)) == ["a", "b", "c", "d"]


def test_to_csv_writes_the_dataframe_without_its_index(tmp_path):
    class Table(CsvExport):
        def to_dataframe(self) -> pd.DataFrame:
            return pd.DataFrame({"operation": ["a,b", "c"], "total_time_us": [1.25, math.nan]})

    Table().to_csv(tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text() == 'operation,total_time_us\n"a,b",1.25\nc,\n'
    back = pd.read_csv(tmp_path / "t.csv")
    assert list(back.columns) == ["operation", "total_time_us"]
