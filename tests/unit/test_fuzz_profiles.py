"""Fuzzing both decoders from the real fixtures: a damaged file opens consistently or is refused.

Each example mutates a committed profile (Chrome trace: odd values in a few events' fields,
fields deleted, events added, the text or the gzip stream cut; XSpace: bytes flipped, inserted,
deleted, the file cut) and opens it with `open_profile`. It must return a `Profile` whose tracks
and events agree, or raise `ProfileError` naming the file; nothing else may escape, and no
example may run long. Examples are derandomized (the same every run) and nothing is stored.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import signal
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.profile.schema import XSpace

pytestmark = pytest.mark.decoding

DATA = Path(__file__).parent.parent / "data"
CHROME_FIXTURES = (
    "torch_tiny_mlp.pt.trace.json.gz", "jax_cpu_demo.trace.json.gz",
    # real Kineto traces from elsewhere (tests/data/public): epoch microseconds as integers
    # and as fractions, baseTimeNanoseconds, GPU processes named by labels or not at all
    "public/hta/trace_compare/base/base.json.gz",
    "public/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "public/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "public/hta/triton_example/triton_example.json.gz",
)
XSPACE_FIXTURES = ("jax_cpu_demo.xplane.pb", "tpu_v6e_inference.xplane.pb")
EXAMPLE_LIMIT_S = 30


def _fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@cache
def _chrome_doc(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


@contextlib.contextmanager
def _time_limit(seconds: int):
    """Fails an example that runs past `seconds` (a hang, or a quadratic path)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise TimeoutError(f"an example ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _open_or_refuse(path: Path) -> None:
    """open_profile(path) gives a consistent Profile or a ProfileError that names the file."""
    with _time_limit(EXAMPLE_LIMIT_S):
        try:
            profile = xw.open_profile(path)
        except xw.ProfileError as exc:
            assert str(path) in str(exc)
            return
    tracks = profile.tracks
    n = profile.n_events
    assert n > 0 and (tracks["n_events"] > 0).all() and tracks["n_events"].sum() == n
    first = tracks["first_event"].to_numpy()
    end = tracks["end_event"].to_numpy()
    assert ((first >= 0) & (first < end) & (end <= n)).all()
    covered = np.zeros(n, np.int64)  # every event in exactly one track
    np.add.at(covered, first, 1)
    np.add.at(covered, end[end < n], -1)
    assert (np.cumsum(covered) == 1).all()
    assert (profile.start_ps >= 0).all() and (profile.duration_ps >= 0).all()
    assert (profile.start_ps + profile.duration_ps >= profile.start_ps).all()  # no wrap-around
    edges = profile.flow_edges()
    assert ((edges[:, :2] >= 0) & (edges[:, :2] < n)).all()
    assert all(w.startswith(f"{path}: ") for w in profile.warnings)


# ---- Chrome traces ---------------------------------------------------------------------------
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e300, -1e300, 1e15, 10**400, -1.0, 0.0, 5e12, "12.5", "", "nan", "X", "B",
                     "E", "s", "f", "M", "C", "e"]),
    st.text(max_size=4), st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["name", "sort_index", "local", "v"]),
                    st.one_of(st.integers(-5, 5), st.text(max_size=2), st.none()), max_size=2))
FIELDS = st.sampled_from(["ph", "ts", "dur", "pid", "tid", "name", "args", "id", "id2", "cat",
                          "bp", "s"])
EDITS = st.lists(st.tuples(st.integers(0, 10**6), FIELDS,
                           st.one_of(st.just("<delete>"), ODD_VALUES)), min_size=1, max_size=6)
EXTRA_EVENTS = st.lists(st.dictionaries(FIELDS, ODD_VALUES, max_size=6), max_size=3)


@st.composite
def chrome_files(draw) -> tuple[str, bytes]:
    doc = copy.deepcopy(_chrome_doc(draw(st.sampled_from(CHROME_FIXTURES))))
    events = doc["traceEvents"]
    for at, field, value in draw(EDITS):
        event = events[at % len(events)]
        if value == "<delete>":
            event.pop(field, None)
        else:
            event[field] = value
    events.extend(draw(EXTRA_EVENTS))
    if draw(st.booleans()):  # a few events twice
        events.extend(copy.deepcopy(events[: draw(st.integers(1, 20))]))
    if draw(st.booleans()):
        doc = events  # the JSON array form
    text = json.dumps(doc).encode()
    cut = draw(st.sampled_from(["none", "none", "text", "gzip"]))
    fraction = draw(st.floats(0.0, 1.0))
    if cut == "text":
        text = text[: int(len(text) * fraction)]
    data = gzip.compress(text, mtime=0) if draw(st.booleans()) or cut == "gzip" else text
    if cut == "gzip":
        data = data[: int(len(data) * fraction)]
    name = draw(st.sampled_from(["trace.json", "rank-0.json.gz", "w.pt.trace.json.gz"]))
    return name, data


@_fuzz(180)
@given(chrome_files())
def test_fuzzed_chrome_traces_open_or_are_refused(tmp_path_factory, file):
    name, data = file
    path = tmp_path_factory.mktemp("chrome") / name
    path.write_bytes(data)
    _open_or_refuse(path)


# ---- XSpace ------------------------------------------------------------------------------------
@st.composite
def xspace_files(draw) -> bytes:
    data = bytearray((DATA / draw(st.sampled_from(XSPACE_FIXTURES))).read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "flip", "insert", "delete", "truncate"]))
        if op == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
    return bytes(data)


@_fuzz(300)
@given(xspace_files())
def test_fuzzed_xspace_files_open_or_are_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("xspace") / "host.xplane.pb"
    path.write_bytes(data)
    _open_or_refuse(path)


@cache
def _xspace(name: str) -> XSpace:
    return XSpace.FromString((DATA / name).read_bytes())


IN_RANGE = st.integers(0, 10**15)  # times and durations a profile can hold (15 min in ps)
ANY_ID = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 3000))
STAT_VALUES = st.one_of(
    st.tuples(st.just("ref_value"), st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 500))),
    st.tuples(st.just("int64_value"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("uint64_value"), st.integers(0, 2**64 - 1)),
    st.tuples(st.just("double_value"), st.floats(allow_nan=True, allow_infinity=True)),
    st.tuples(st.just("str_value"), st.text(max_size=8)),
    st.tuples(st.just("bytes_value"), st.binary(max_size=8)),
    st.tuples(st.just("metadata_id"), ANY_ID))
XSPACE_EDITS = st.lists(st.one_of(
    st.tuples(st.just("event"), st.integers(0, 10**6),
              st.sampled_from(["offset_ps", "duration_ps", "num_occurrences"]), IN_RANGE),
    st.tuples(st.just("event"), st.integers(0, 10**6), st.just("metadata_id"), ANY_ID),
    st.tuples(st.just("line"), st.integers(0, 10**6), st.sampled_from(["id", "display_id"]),
              ANY_ID),
    st.tuples(st.just("stat"), st.integers(0, 10**6), st.just(""), STAT_VALUES),
    st.tuples(st.just("metadata name"), st.integers(0, 10**6), st.just(""),
              st.sampled_from(["", "Hlo Proto", "step_num", "program_id", "flow", "group_id",
                               "hlo_module", "x" * 300])),
), min_size=1, max_size=5)


def _apply(space: XSpace, kind: str, at: int, field: str, value) -> None:
    plane = space.planes[at % len(space.planes)]
    lines = [line for line in plane.lines if line.events]
    if kind == "line" and plane.lines:
        setattr(plane.lines[at % len(plane.lines)], field, value)
    elif kind in ("event", "stat") and lines:
        line = lines[at % len(lines)]
        event = line.events[(at // 7) % len(line.events)]
        if kind == "event":
            setattr(event, field, value)
        elif event.stats:
            setattr(event.stats[(at // 13) % len(event.stats)], *value)
    elif kind == "metadata name" and plane.stat_metadata:
        keys = sorted(plane.stat_metadata)
        plane.stat_metadata[keys[at % len(keys)]].name = value


@_fuzz(150)
@given(st.sampled_from(XSPACE_FIXTURES), XSPACE_EDITS)
def test_xspace_files_with_odd_field_values_open_or_are_refused(tmp_path_factory, name, edits):
    space = XSpace()
    space.CopyFrom(_xspace(name))
    for edit in edits:
        _apply(space, *edit)
    path = tmp_path_factory.mktemp("xspace") / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    _open_or_refuse(path)


# ---- what fuzzing found in the XSpace decoder: times that do not fit int64 picoseconds -------
def _one_line(events: list, timestamp_ns: int = 1000) -> list[dict]:
    return [{"name": "/host:CPU", "lines": [{"name": "t", "timestamp_ns": timestamp_ns,
                                             "events": events}]}]


XSPACE_FINDINGS = [
    pytest.param([{"name": "/host:CPU", "lines": [
        {"name": "a", "timestamp_ns": 0, "events": [("a", 0, 10, {})]},
        {"name": "b", "timestamp_ns": 2**62, "events": [("b", 0, 10, {})]}]}],
        id="lines-2**62-ns-apart"),
    pytest.param(_one_line([("a", 0, 10, {}), ("b", 2**63 - 1, 10, {})]), id="offset-int64-max"),
    pytest.param(_one_line([("a", 0, 10, {}), ("b", -(2**63), 10, {})]), id="offset-int64-min"),
    pytest.param(_one_line([("a", 0, -1, {})]), id="negative-duration"),
]


@pytest.mark.parametrize("planes", XSPACE_FINDINGS)
def test_xspace_times_out_of_int64_range_are_refused_or_dropped(tmp_path, planes):
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(build_xspace(planes))
    _open_or_refuse(path)
    if sum(len(line["events"]) for line in planes[0]["lines"]) > 1:
        profile = xw.open_profile(path)  # the sane event opens; the other is counted
        assert any("skipped 1 events whose times do not fit" in w for w in profile.warnings)
