"""Host self time of a real PyTorch CPU trace equals PyTorch's own `key_averages()`.

tests/data/torch_self_time/ holds a torch 2.13.0 CPU profile (tests/data/make/torch_self_time.py)
and the key_averages() table of the same run. PyTorch's self CPU time is an event's duration
minus every event directly inside it on its thread, `record_function` annotations included;
the trace holds a cpu_op (ScaledTanhBackward) around an annotation around ops, where the older
rule (subtract only the cpu_ops inside) differs by milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xprof_widgets as xw

DATA = Path(__file__).resolve().parents[1] / "data" / "torch_self_time"
# The trace states nanoseconds (3 decimals of a microsecond) and PyTorch sums float
# microseconds: a name's sum may differ by float rounding only, well under 1 ns per call.
TOLERANCE_US = 1e-3


def same_as_key_averages(calls: int, total_us: float, self_us: float, theirs: dict,
                         key: object) -> None:
    """A row's calls, total and self time as key_averages() states them (`theirs`: one of its
    rows), each time within TOLERANCE_US."""
    assert calls == theirs["count"], key
    assert total_us == pytest.approx(theirs["cpu_time_total_us"], abs=TOLERANCE_US), key
    assert self_us == pytest.approx(theirs["self_cpu_time_total_us"], abs=TOLERANCE_US), key


@pytest.fixture(scope="module")
def host_rows():
    table = xw.FrameworkOpStats(xw.open_profile(DATA / "trace.json.gz")).to_dataframe()
    host = table[(table["host_or_device"] == "Host") & (table["type"] != "IDLE")]
    return {row.operation: row for row in host.itertuples(index=False)}


@pytest.fixture(scope="module")
def key_averages():
    return {row["key"]: row for row in json.loads((DATA / "key_averages.json").read_text())}


def test_every_op_equals_key_averages(host_rows, key_averages):
    """Calls, total and self time of every cpu_op name, as key_averages() states them."""
    assert len(host_rows) > 50
    for name, row in host_rows.items():
        theirs = key_averages[name]
        same_as_key_averages(row.occurrences, row.total_time_us, row.total_self_time_us,
                             theirs, name)


def test_only_annotations_have_no_row(host_rows, key_averages):
    """key_averages() also lists the record_function annotations; they are not ops here (their
    self time is the host's idle), and nothing else is missing."""
    missing = set(key_averages) - set(host_rows)
    assert missing == {"my_block", "optimizer_block", "scaled_tanh_grad",
                       "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"}


def test_annotation_inside_an_op_is_its_child(host_rows, key_averages):
    """ScaledTanhBackward's Python work runs inside the scaled_tanh_grad annotation: PyTorch
    (and we) leave it out of the op's self time; the old rule kept it (milliseconds here)."""
    op, annotation = host_rows["ScaledTanhBackward"], key_averages["scaled_tanh_grad"]
    assert annotation["self_cpu_time_total_us"] > 1000
    assert op.total_self_time_us < op.total_time_us - annotation["cpu_time_total_us"] + \
        TOLERANCE_US
