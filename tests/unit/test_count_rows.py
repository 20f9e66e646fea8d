"""The compiled count of events per metadata row (`count_rows`) against np.bincount, and its
refusal of a row outside the table."""

from __future__ import annotations

import numpy as np
import pytest

from xprof_widgets.profile._wire import count_rows


def test_counts_are_bincounts_added_in() -> None:
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 9, 40).astype(np.int64)
    before = counts.copy()
    meta = rng.integers(0, 40, 10_000).astype(np.int32)
    count_rows(meta, counts)
    assert np.array_equal(counts, before + np.bincount(meta, minlength=40))


@pytest.mark.parametrize("row", [-1, 40])
def test_a_row_outside_the_table_is_an_error(row: int) -> None:
    meta = np.array([0, 3, row, 1], np.int32)
    with pytest.raises(ValueError, match=f"event 2 names metadata row {row}, outside the 40"):
        count_rows(meta, np.zeros(40, np.int64))
