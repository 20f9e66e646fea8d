"""The Python half of the shared table (js/src/lib/table.js).

A view's table arrives as columnar JSON (`columnar`: one list per column, NaN and inf as null,
numpy scalars as plain numbers), which `rowsOf` turns back into rows in the browser. Widgets
whose `to_dataframe()` is that table mix in `CsvExport` for `to_csv(path)`: the same columns
and raw values as the view's "Export as CSV" button.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pandas as pd

from ._base import jsonable


def columnar(frame: pd.DataFrame, columns: list[str] | None = None) -> dict[str, list]:
    """The frame's columns (all, or those named, in that order) as JSON-able lists."""
    names = list(frame.columns) if columns is None else columns
    return {str(name): jsonable(frame[name].to_numpy().tolist()) for name in names}


class CsvExport:
    """`to_csv(path)` for a widget whose `to_dataframe()` is its table."""

    to_dataframe: Callable[[], pd.DataFrame]  # the widget's own

    def to_csv(self, path: str | os.PathLike, **kwargs: Any) -> None:
        """Write `to_dataframe()` as CSV (pandas' `to_csv`, without the index unless asked)."""
        kwargs.setdefault("index", False)
        self.to_dataframe().to_csv(path, **kwargs)
