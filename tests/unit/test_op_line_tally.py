"""The compiled pass over an `XLA Ops` line (`tally_op_line`) against its numpy statement:
bincounts of the times, counts and log moments, and `_nesting`'s parents and busy time, on
random lines in order, out of order, nested and with shared starts; and the lines tallied on
worker threads against one thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from xprof_widgets._native.intervals import tally_op_line

import xprof_widgets as xw
from xprof_widgets.analysis.op_profile import _collect_tpu, _nesting, _nesting_order


def _line(rng: np.random.Generator, n: int, shuffled: bool) -> tuple[np.ndarray, ...]:
    start = np.sort(rng.integers(0, 40, n)).astype(np.int64) * 1000
    duration = rng.integers(0, 5, n).astype(np.int64) * 1000
    if shuffled:
        order = rng.permutation(n)
        start, duration = start[order], duration[order]
    return start, duration


@pytest.mark.parametrize("shuffled", [False, True])
def test_the_pass_equals_the_numpy_statement(shuffled: bool) -> None:
    rng = np.random.default_rng(11 + shuffled)
    for _ in range(300):
        n = int(rng.integers(1, 50))
        start, duration = _line(rng, n, shuffled)
        trace = rng.integers(0, 9000, n).astype(np.int64)
        op_of_meta = rng.integers(-1, 6, 12).astype(np.int32)
        meta = rng.integers(0, 12, n).astype(np.int32)
        op = op_of_meta[meta] + 1
        m = 7
        order, contained, holds = _nesting(start, start + duration)
        parents = np.zeros(m, bool)
        parents[op[order][holds]] = True
        ordered = duration[order]
        busy = int(ordered.sum()) - int(ordered[contained].sum())
        logs = np.log1p(duration.astype(np.float64))

        line = np.zeros((4, m))
        counts = np.zeros(m, np.int64)
        got_parents = np.zeros(m, bool)
        got = tally_op_line(start, duration, trace, meta, op_of_meta,
                            _nesting_order(start, duration), line[0], counts, line[1],
                            line[2], line[3], got_parents.view(np.uint8))
        assert got == busy
        assert np.array_equal(got_parents, parents)
        assert np.array_equal(counts, np.bincount(op, minlength=m))
        assert np.array_equal(line[0], np.bincount(op, weights=duration, minlength=m))
        assert np.allclose(line[1], np.bincount(op, weights=logs, minlength=m), rtol=1e-14)
        assert np.allclose(line[2], np.bincount(op, weights=logs * logs, minlength=m),
                           rtol=1e-14)
        assert np.array_equal(line[3], np.bincount(op, weights=trace, minlength=m))


TPU_FIXTURES = ["tpu_v6e_inference.xplane.pb", "synthetic_tpu.xplane.pb"]


@pytest.mark.parametrize("fixture", TPU_FIXTURES)
def test_lines_on_threads_tally_what_one_thread_tallies(fixture: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines run on worker threads and their tallies are added in line order, so the
    floats are those of one thread, bit for bit."""
    profile = xw.open_profile(Path(__file__).parents[1] / "data" / fixture)
    monkeypatch.setattr("xprof_widgets.profile.threads.THREADED_FROM", 0)  # small files too
    made = []
    for threads in (1, 2, 3):
        monkeypatch.setenv("XPROF_WIDGETS_THREADS", str(threads))
        made.append(_collect_tpu(profile))
    one = made[0]
    assert len(one.ops) > 10 and one.busy_time_ps > 0
    for other in made[1:]:
        pd.testing.assert_frame_equal(other.ops, one.ops, check_exact=True)
        assert (other.busy_time_ps, other.total_time_ps, other.notes, other.parents) == (
            one.busy_time_ps, one.total_time_ps, one.notes, one.parents)
