"""PyTorch profiler (Kineto) traces as PyTorch users read them, with times exact at any epoch."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.trace import TraceIndex

PUBLIC = Path(__file__).parents[1] / "data" / "public" / "hta"
NCCL = PUBLIC / "nccl_parser_config" / "nccl_data.json.gz"
NO_METADATA = PUBLIC / "trace_compare" / "base" / "base.json.gz"


def write(tmp_path: Path, text: str, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def exact_ps(text: str) -> int:
    return int((Decimal(text) * 10**6).to_integral_value())  # half to even, as the decoder


# ---- times ---------------------------------------------------------------------------------
EPOCH_TS = ["1712195495406752.8", "1712195495406752.123456789", "1712195495406753",
            "1712195495406760.0000005", "1712195495406760.0000015"]


def test_epoch_microseconds_with_fractions_are_exact_to_the_picosecond(tmp_path):
    """Seventeen to twenty-five significant digits: more than a float holds, 1.7e21 ps."""
    events = ",".join(f'{{"ph": "X", "name": "e{i}", "pid": 1, "tid": {i}, "ts": {ts}, '
                      f'"dur": 0.000001}}' for i, ts in enumerate(EPOCH_TS))
    profile = xw.open_profile(write(tmp_path, f'{{"traceEvents": [{events}]}}'))
    exact = [exact_ps(ts) for ts in EPOCH_TS]
    by_name = dict(zip(profile.display_names[profile.meta], profile.start_ps.tolist(), strict=True))
    assert [by_name[f"e{i}"] for i in range(len(EPOCH_TS))] == [t - min(exact) for t in exact]
    assert profile.origin_ps == min(exact)
    assert (profile.duration_ps == 1).all()
    assert by_name["e4"] - by_name["e3"] == 2  # 0.5 ps rounds to 0, 1.5 ps to 2: half to even


def test_base_time_nanoseconds_puts_the_trace_on_the_epoch_clock(tmp_path):
    base = 1_711_964_646_000_000_000
    text = (f'{{"baseTimeNanoseconds": {base}, "displayTimeUnit": "ns", "traceEvents": ['
            '{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 4458676388068.751, "dur": 2.5},'
            '{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "4458676388070.25", "dur": 1}]}')
    profile = xw.open_profile(write(tmp_path, text))
    assert profile.origin_ps == base * 1000 + exact_ps("4458676388068.751")
    assert profile.start_ps.tolist() == [0, exact_ps("1.499")]  # displayTimeUnit: display only
    assert profile.duration_ps.tolist() == [2_500_000, 1_000_000]


def test_begin_end_pairs_at_epoch_time_keep_exact_durations(tmp_path):
    text = ('[{"ph": "B", "name": "x", "pid": 1, "tid": 1, "ts": 1712195495406752.000001},'
            '{"ph": "E", "pid": 1, "tid": 1, "ts": 1712195495406753.000003}]')
    profile = xw.open_profile(write(tmp_path, text))
    assert profile.duration_ps.tolist() == [1_000_002]


def test_integer_epoch_microseconds_do_not_overflow(tmp_path):
    text = ('{"traceEvents": [{"ph": "X", "name": "x", "pid": 1, "tid": 1, '
            '"ts": 1661938466265032, "dur": 25}, {"ph": "i", "name": "y", "pid": 1, "tid": 1, '
            '"ts": 1661938466265040}]}')
    profile = xw.open_profile(write(tmp_path, text))
    assert profile.start_ps.tolist() == [0, 8_000_000]
    assert profile.origin_ps == 1661938466265032 * 10**6


# ---- processes, threads, flows and steps as Kineto writes them --------------------------------
def test_kineto_processes_carry_their_pid_and_label_and_devices_are_devices():
    profile = xw.open_profile(NCCL)
    sections = profile.sections.set_index("name")["kind"].to_dict()
    assert sections["python3.10 (2910249)"] == "host"
    assert sections["python3.10 (0) GPU 0"] == "device"
    gpu = profile.tracks[profile.tracks["section"] == "python3.10 (0) GPU 0"]
    assert gpu["name"].tolist() == ["stream 7", "stream 40"]  # Kineto's "stream 7 ", trimmed
    first = profile.sections["name"].tolist()[:2]
    assert first == ["python3.10 (2910249)", "python3.10 (0) GPU 0"]  # by process_sort_index


def test_a_process_holding_kernels_is_a_device_without_metadata():
    profile = xw.open_profile(NO_METADATA)
    assert profile.sections.set_index("name")["kind"].to_dict() == {
        "Process 2568503": "host", "Process 1": "device"}


def _launches(path: Path) -> set[tuple[str, str, int]]:
    """(runtime call, device event, correlation) pairs, from the JSON itself."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    calls, device = {}, []
    for e in events:
        correlation = (e.get("args") or {}).get("correlation")
        if e.get("ph") != "X" or correlation is None:
            continue
        if e["cat"].endswith(("_runtime", "_driver")):
            calls[correlation] = e["name"]
        else:
            device.append((e["name"], correlation))
    return {(calls[c], name, c) for name, c in device if c in calls}


@pytest.mark.parametrize("path", [NCCL, NO_METADATA], ids=["ac2g flows", "no flow events"])
def test_every_kernel_flows_from_the_call_that_launched_it(path):
    profile = xw.open_profile(path)
    edges = TraceIndex(profile).flows.frame()
    correlation = edges[edges["kind"] == "correlation"]
    names = profile.display_names[profile.meta]
    src = correlation["from_event"].to_numpy()
    dst = correlation["to_event"].to_numpy()
    found = {(a, b) for a, b in zip(names[src], names[dst], strict=True)}
    expected = {(call, kernel) for call, kernel, _ in _launches(path)}
    assert expected and found == expected
    assert len(correlation) == len(_launches(path))


def test_profiler_steps_are_the_steps():
    steps = xw.InputPipeline(xw.open_profile(NCCL)).to_dataframe()
    assert steps["name"].str.fullmatch(r"ProfilerStep#\d+").all()
    assert len(steps) >= 3
