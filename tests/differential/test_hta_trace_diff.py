"""Kineto trace diffs against HTA 0.5's TraceDiff, run live on the public corpus.

HTA's `TraceDiff.compare_traces` and `ops_diff` are run on directories holding copies of the
corpus traces (as HTA's own tests load them) and compared with `Comparison.trace_diff`: the
same names, the same count of each in each run, the same added / removed / more / fewer / same
split (HTA's added, deleted, increased, decreased, unchanged), and the same total time of each
name in each run. Pairs: HTA's trace_diff control and test, trace_compare base and test (every
device type, other steps than the first), two ranks of one run (sampled_rank-0 and -1 opened
as one run). Each difference is a rule of docs/from_hta.md, applied here, never a tolerance:

- ABSENT_IS_NAN: HTA's time of a name one run lacks is 0; ours is NaN (its count is 0 in both);
- WHOLE_MICROSECONDS: on traces with fractional times HTA rounds each event inward to whole
  microseconds; the traces of the pairs are whole microseconds, so their times must be equal as
  they are, and on the fractional single traces below our events are rounded as HTA rounds
  them before their times are compared.
"""

from __future__ import annotations

import copy
import gzip
import json
import logging
import math
import shutil
import tempfile
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff

import xprof_widgets as xw
from xprof_widgets.analysis.compare import Comparison
from xprof_widgets.analysis.kineto.trace_diff import step_events, trace_scope

HTA_DIR = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"
PS_PER_US = 10**6
HTA_WORDS = {"added": "added", "deleted": "removed", "increased": "more",
             "decreased": "fewer", "unchanged": "same"}
"""HTA's ops_diff keys and our count_change words."""
DEVICES = {"all": DeviceType.ALL, "cpu": DeviceType.CPU, "gpu": DeviceType.GPU}


def _quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.CRITICAL)
        try:
            return build()
        finally:
            logging.disable(logging.NOTSET)


@cache
def labeled(*files: str) -> LabeledTrace:
    """HTA's parsed trace of these corpus files, as one run's rank files in one directory."""
    tmp = Path(tempfile.mkdtemp(prefix="hta_diff_"))
    try:
        for name in files:
            shutil.copy(HTA_DIR / name, tmp / Path(name).name)
        return _quiet(lambda: LabeledTrace(label="run", trace_dir=str(tmp)))
    finally:
        shutil.rmtree(tmp)


@cache
def ours(*files: str) -> xw.Profile:
    tmp = Path(tempfile.mkdtemp(prefix="xw_diff_"))
    for name in files:
        shutil.copy(HTA_DIR / name, tmp / Path(name).name)
    return xw.open_profile(tmp)


def hta_diff(control: LabeledTrace, test: LabeledTrace, **kwargs) -> pd.DataFrame:
    """compare_traces with the labels `control` and `test` (HTA names its columns by label)."""
    if control is test:  # one run against itself (two of its ranks): HTA needs two labels
        test = copy.copy(control)  # a new LabeledTrace would parse the files again
    control.label, test.label = "control", "test"
    return _quiet(lambda: TraceDiff.compare_traces(control, test, **kwargs))


def hta_split(diff: pd.DataFrame) -> dict[str, str]:
    """ops_diff's split of every name, from compare_traces's table as ops_diff makes it."""
    c, t, d = diff["control_counts"], diff["test_counts"], diff["diff_counts"]
    groups = {"added": c.eq(0) & t.gt(0), "deleted": c.gt(0) & t.eq(0),
              "increased": c.gt(0) & d.gt(0), "decreased": t.gt(0) & d.lt(0),
              "unchanged": t.gt(0) & d.eq(0)}
    split: dict[str, str] = {}
    for key, mask in groups.items():
        for name in diff.index[mask]:
            assert name not in split, f"{name} in two of HTA's groups"
            split[name] = HTA_WORDS[key]
    return split


def assert_same_diff(mine: pd.DataFrame, hta: pd.DataFrame) -> None:
    mine = mine.set_index("name")
    assert sorted(mine.index) == sorted(hta.index)
    hta = hta.loc[mine.index]
    np.testing.assert_array_equal(mine["occurrences_before"], hta["control_counts"])
    np.testing.assert_array_equal(mine["occurrences_after"], hta["test_counts"])
    assert mine["count_change"].to_dict() == hta_split(hta)
    for side, label in (("before", "control"), ("after", "test")):
        absent = hta[f"{label}_counts"].eq(0).to_numpy()
        time = mine[f"time_{side}_us"].to_numpy(np.float64)
        # ABSENT_IS_NAN
        assert np.isnan(time[absent]).all() and (hta[f"{label}_total_duration"][absent] == 0).all()
        np.testing.assert_array_equal(time[~absent],
                                      hta[f"{label}_total_duration"].to_numpy()[~absent])


PAIRS = [("trace_diff/control/control.json.gz", "trace_diff/test/test.json.gz"),
         ("trace_compare/base/base.json.gz", "trace_compare/test/test.json.gz")]


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("pair", PAIRS, ids=["trace_diff", "trace_compare"])
def test_a_pair_as_hta_compares_it(pair, device):
    before, after = pair
    hta = hta_diff(labeled(before), labeled(after), device_type=DEVICES[device])
    mine = Comparison(ours(before), ours(after)).trace_diff(device=device)
    assert len(mine) == len(hta) > 0
    assert_same_diff(mine, hta)


@pytest.mark.parametrize(("step_before", "step_after"), [(1012, 1014), ([1010, 1011], 1013)])
def test_other_steps_than_the_first(step_before, step_after):
    before, after = PAIRS[0]
    hta = hta_diff(labeled(before), labeled(after), control_iteration=step_before,
                   test_iteration=step_after)
    comparison = Comparison(ours(before), ours(after))
    mine = comparison.trace_diff(iteration_before=step_before, iteration_after=step_after)
    assert comparison.trace_scope(iteration_before=step_before,
                                  iteration_after=step_after)["steps_after"] == [step_after]
    assert_same_diff(mine, hta)


RANKS = ("trace_filter/sampled_rank-0.json.gz", "trace_filter/sampled_rank-1.json.gz")


@pytest.mark.parametrize(("rank_before", "rank_after"), [(0, 1), (1, 0), ([0, 1], 1)])
def test_two_ranks_of_one_run(rank_before, rank_after):
    run = ours(*RANKS)
    assert run.hosts == ["rank 0", "rank 1"]
    hta = hta_diff(labeled(*RANKS), labeled(*RANKS), control_rank=rank_before,
                   test_rank=rank_after)
    mine = Comparison(run, run).trace_diff(rank_before=rank_before, rank_after=rank_after)
    assert_same_diff(mine, hta)


# ---- fractional times: WHOLE_MICROSECONDS applied to ours ----------------------------------------
FRACTIONAL = ["ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
              "nccl_parser_config/nccl_data.json.gz",
              "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"]


def _doc(name: str) -> dict:
    data = (HTA_DIR / name).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def whole_microsecond_times(profile: xw.Profile, doc: dict, iteration: int) -> pd.Series:
    """WHOLE_MICROSECONDS: our events of the step, each as HTA holds it (ceil of its float64
    ts, floor of ts + dur, from the file's own ts), summed by name."""
    found = step_events(profile)
    events = found["event"].to_numpy(np.int64)[found["iteration"].to_numpy() == iteration]
    offset = profile.origin_ps - int(doc.get("baseTimeNanoseconds", 0)) * 1000
    start = profile.start_ps[events].tolist()
    duration = profile.duration_ps[events].tolist()
    rounded = []
    for begin, length in zip(start, duration, strict=True):
        ts = (begin + offset) / PS_PER_US  # the double json reads: both correctly rounded
        rounded.append(math.floor(ts + length / PS_PER_US) - math.ceil(ts))
    names = profile.metadata["name"].to_numpy(dtype=object)[profile.meta[events]]
    return pd.Series(rounded, index=names, dtype=np.int64).groupby(level=0).sum()


@pytest.mark.parametrize("name", FRACTIONAL, ids=[Path(n).parent.name for n in FRACTIONAL])
def test_a_trace_with_fractional_times_against_itself(name):
    doc = _doc(name)
    assert any(type(e.get("ts")) is float and not e["ts"].is_integer()
               for e in doc["traceEvents"] if isinstance(e, dict))
    hta = hta_diff(labeled(name), labeled(name))
    profile = ours(name)
    mine = Comparison(profile, profile).trace_diff().set_index("name")
    assert sorted(mine.index) == sorted(hta.index)
    hta = hta.loc[mine.index]
    np.testing.assert_array_equal(mine["occurrences_before"], hta["control_counts"])
    assert (mine["count_change"] == "same").all()
    (_,), (step,) = trace_scope(profile)
    rounded = whole_microsecond_times(profile, doc, step).loc[mine.index]
    np.testing.assert_array_equal(rounded.to_numpy(), hta["control_total_duration"].to_numpy())
