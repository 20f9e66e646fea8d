"""XProf's tables as DataFrames: its tools answer in Google Charts' DataTable JSON."""

from __future__ import annotations

import pandas as pd


def frame(table: dict) -> pd.DataFrame:
    """One DataTable (`{"cols": [{"id": ...}], "rows": [{"c": [{"v": ...}]}]}`) as a frame."""
    columns = [c["id"] for c in table["cols"]]
    rows = [[cell.get("v") if cell else None for cell in row["c"]] for row in table["rows"]]
    return pd.DataFrame(rows, columns=columns)
