"""The compiled Chrome-trace scanner against the Python reader, its oracle (issue 29, item 4).

`scan_chrome` must give the HostTrace `decode_chrome_python` gives (columns, tables, warnings,
every event's args: chrome_oracle.assert_same_trace) on every real trace we hold, gzipped, plain
and memory-mapped, at any piece size, and on fuzzed variants of a real Kineto trace; where it
hands a file back (None), `decode_chrome` is the Python reader. Damaged files degrade: small ones
through the Python reader (its trace and warnings), large ones through the scanner's own salvage
(the events the Python reader keeps, a warning naming the file).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chrome_oracle import assert_same_trace

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile import chrome_scan, mapped
from xprof_widgets.profile.chrome import decode_chrome, decode_chrome_python
from xprof_widgets.profile.chrome_args import HOT_ARGS
from xprof_widgets.profile.chrome_scan import scan_chrome
from xprof_widgets.profile.mapped import MappedFile, map_file

pytestmark = pytest.mark.decoding

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CORPUS = ROOT.parent / "shared" / "corpus"
"""../shared/corpus beside the repository (CI holds a read-only copy); skipped when absent."""
HOST = "h"
TINY_MLP = DATA / "torch_tiny_mlp.pt.trace.json.gz"
EXECUTION_TRACE = DATA / "public/hta/execution_trace/benchmark_simple_add_et.json.gz"
MEMORY_TIMELINE = DATA / "public/hta/memory_analysis/memory_timeline.raw.gz"
SMALL_TRACES = (DATA / "public/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
                DATA / "public/hta/call_stack/backward_thread.json",
                DATA / "public/hta/trace_compare/base/base.json.gz")
"""Real traces of 5-25 kB (Kineto: metadata, kernels, flows, a header on both sides of
`traceEvents`), for the tests that decode a file many times."""
FULL_COMPARE_EVENTS = 10_000
"""Traces up to this many events have every event's args compared; larger ones those of
SPREAD_EVENTS spread over the trace (assert_same_trace's per-event loops cost ~50 us an event
and side; the columns and tables are compared whole)."""
SPREAD_EVENTS = 4_000
BYTES_IN_MEMORY = 16 << 20
"""Larger gzipped traces are not also scanned as plain bytes in memory: their mapped text takes
the same path (windows of plain text), and the 87 MB MTIA trace costs 2 s a scan."""


# ---- comparing -----------------------------------------------------------------------------------
def _outcome(decode: Any, data: Any, source: str) -> Any:
    """A decode's HostTrace (None where scan_chrome hands the file back), or the message of the
    ProfileError it raised."""
    try:
        return decode(data, source, HOST)
    except ProfileError as exc:
        return str(exc)


class _Sampled:
    """A HostTrace whose per-event args assert_same_trace visits only at `events`; every other
    attribute (columns, tables, warnings) is the whole trace's."""

    def __init__(self, trace: Any, events: np.ndarray):
        self._trace = trace
        self.n_events = int(events.shape[0])
        self.details = _SampledDetails(trace.details, events)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trace, name)


class _SampledDetails:
    def __init__(self, details: Any, events: np.ndarray):
        self._details = details
        self._events = events

    def stats(self, event: int) -> dict:
        return self._details.stats(int(self._events[event]))

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        return self._details.stat_column(self._events[events], name)

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        return self._details.stat_ints(self._events[events], name)


def _spread(n: int) -> np.ndarray:
    """Every event of a small trace; of a large one its first and last few thousand and an even
    spread between."""
    if n <= FULL_COMPARE_EVENTS:
        return np.arange(n)
    ends = SPREAD_EVENTS // 4
    middle = np.linspace(ends, n - ends, SPREAD_EVENTS - 2 * ends).astype(np.int64)
    return np.unique(np.concatenate([np.arange(ends), middle, np.arange(n - ends, n)]))


def assert_same(got: Any, want: Any) -> None:
    """The same outcome: equal HostTraces (chrome_oracle), or the same ProfileError message."""
    if isinstance(want, str):
        assert got == want
        return
    assert got is not None and not isinstance(got, str), got
    events = _spread(want.n_events)
    if events.shape[0] == want.n_events:
        assert_same_trace(got, want)
    else:
        assert got.n_events == want.n_events
        assert_same_trace(_Sampled(got, events), _Sampled(want, events))


def assert_decodes_alike(data: bytes, source: str) -> Any:
    """scan_chrome gives the oracle's trace (or its error), or hands the file back and
    decode_chrome is then the oracle; returns the scanner's result."""
    want = _outcome(decode_chrome_python, data, source)
    scanned = _outcome(scan_chrome, data, source)
    assert_same(_outcome(decode_chrome, data, source) if scanned is None else scanned, want)
    return scanned


def _plain(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1, mtime=0)


# ---- every file we hold --------------------------------------------------------------------------
def _json_files() -> list[tuple[str, Path]]:
    """Every JSON file (plain or gzipped) under tests/data (but tests/data/expected, tool
    answers) and the corpus, once per content: the corpus repeats tests/data/public."""
    seen: set[str] = set()
    out = []
    for root, label in ((DATA, "data"), (CORPUS, "corpus")):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or rel.parts[0] == "expected" \
                    or not (path.name.endswith(".json") or path.name.endswith(".gz")):
                continue
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
            if digest not in seen:
                seen.add(digest)
                out.append((f"{label}/{rel}", path))
    return out


FILES = _json_files()


def _mapped(plain: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MappedFile:
    """The plain text mapped from a file (map_file maps files of any size here)."""
    monkeypatch.setattr(mapped, "MIN_MAPPED_BYTES", 1)
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "trace.json"
    path.write_bytes(plain)
    data = map_file(str(path))
    assert isinstance(data, MappedFile)
    return data


@pytest.mark.parametrize("path", [p for _, p in FILES], ids=[i for i, _ in FILES])
def test_every_file_decodes_as_the_python_reader_does(path, tmp_path, monkeypatch):
    """Gzipped, plain and mapped (three code paths: pieces from a thread with args copied out,
    windows of bytes, windows of a mapping released as the scan passes; gzipped files over
    BYTES_IN_MEMORY not as bytes): the oracle's trace, or for files that are not traces its
    error, the scanner handing them back or refusing them in the same words (a well-formed list
    of objects that are not events is scanned to its end)."""
    data = path.read_bytes()
    plain = _plain(data)
    source = str(path)
    want = _outcome(decode_chrome_python, data, source)
    forms = {"as is": data, "mapped": _mapped(plain, tmp_path, monkeypatch)}
    if plain is data:
        forms["gzip"] = _gz(plain)
    elif len(plain) <= BYTES_IN_MEMORY:
        forms["plain"] = plain
    for form, bytes_ in forms.items():
        got = _outcome(scan_chrome, bytes_, source)
        if isinstance(want, str):
            assert got is None or got == want, form
            assert _outcome(decode_chrome, bytes_, source) == want, form
        else:
            assert got is not None, f"{form}: the scanner handed an intact trace back"
            assert_same(got, want)


@pytest.mark.parametrize("path, what", [
    (EXECUTION_TRACE, "a PyTorch execution trace"),
    (MEMORY_TIMELINE, "PyTorch's raw memory timeline")])
def test_known_non_traces_are_refused_in_the_python_readers_words(path, what):
    """The two JSON files PyTorch writes beside its traces are named for what they are."""
    data = path.read_bytes()
    assert scan_chrome(data, str(path), HOST) is None
    with pytest.raises(ProfileError) as error:
        decode_chrome(data, str(path), HOST)
    assert str(error.value) == _outcome(decode_chrome_python, data, str(path))
    assert str(error.value).startswith(f"{path}: {what}")


# ---- piece and window boundaries -----------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_any_piece_or_window_size_gives_the_same_trace(size, tmp_path, monkeypatch):
    """Events, strings, numbers and header members cut anywhere between the gzip pieces (the
    tail carried into the next piece) or the plain windows (grown where an event is larger; of
    a mapping, each window's pages released while the next one is read)."""
    monkeypatch.setattr(chrome_scan, "_PIECE", size)
    monkeypatch.setattr(chrome_scan, "_WINDOW", size)
    for path in SMALL_TRACES:
        plain = _plain(path.read_bytes())
        want = decode_chrome_python(plain, str(path), HOST)
        for data in (plain, _gz(plain), _mapped(plain, tmp_path / path.name, monkeypatch)):
            assert_same(scan_chrome(data, str(path), HOST), want)


# ---- a plain file in two parts, on two threads -------------------------------------------------
def _parts_used(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records how many scanners each plain scan kept (2: the guessed split held)."""
    kept: list[int] = []
    scan_plain = chrome_scan._scan_plain

    def spy(data: Any) -> Any:
        result = scan_plain(data)
        kept.append(len(result[0]))
        return result

    monkeypatch.setattr(chrome_scan, "_scan_plain", spy)
    monkeypatch.setattr(chrome_scan, "_PARALLEL_BYTES", 0)
    return kept


def test_two_parts_scanned_at_once_give_the_same_trace(tmp_path, monkeypatch):
    """Each half of a file read by its own scanner, joined (event numbers, tracks, names, flow
    keys across the split, pulled-out args): the one-scanner trace."""
    kept = _parts_used(monkeypatch)
    for path in (*SMALL_TRACES, TINY_MLP):
        plain = _plain(path.read_bytes())
        want = decode_chrome_python(plain, str(path), HOST)
        for data in (plain, _mapped(plain, tmp_path / path.name, monkeypatch)):
            assert_same(scan_chrome(data, str(path), HOST), want)
    assert kept and all(n == 2 for n in kept)


def test_flows_across_the_split_join_their_points(monkeypatch):
    """A flow starting in the first part and ending in the second is one flow: the second
    scanner's flow keys are numbered as the first's where they are the same."""
    kept = _parts_used(monkeypatch)
    first = [{"ph": "X", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5, "name": "launch"}
             for i in range(30)]
    first += [{"ph": "s", "pid": 1, "tid": 1, "ts": 10 * i + 1, "id": i, "cat": "ac2g"}
              for i in range(30)]
    second = [{"ph": "X", "pid": 2, "tid": 7, "ts": 10 * i + 2, "dur": 5, "name": "kernel"}
              for i in range(30)]
    second += [{"ph": "f", "pid": 2, "tid": 7, "ts": 10 * i + 3, "id": i, "cat": "ac2g",
                "bp": "e"} for i in range(30)]
    plain = json.dumps({"traceEvents": first + second}).encode()
    want = decode_chrome_python(plain, "flows.json", HOST)
    assert want.flow_edges.shape[0] == 30
    assert_same(scan_chrome(plain, "flows.json", HOST), want)
    assert kept == [2]


def test_a_split_guessed_inside_an_event_is_dropped(monkeypatch):
    """The split is a guess (`}, {` past the middle); where it falls inside an event (here a
    list of objects in one event's args across the middle) the first scanner reads on alone."""
    kept = _parts_used(monkeypatch)
    events = [{"ph": "X", "pid": 1, "tid": 1, "ts": i, "dur": 1, "name": f"e{i}"}
              for i in range(20)]
    events.insert(10, {"ph": "X", "pid": 1, "tid": 2, "ts": 5, "dur": 3, "name": "big",
                       "args": {"items": [{"k": i} for i in range(2000)]}})
    plain = json.dumps({"traceEvents": events}).encode()
    assert_same(scan_chrome(plain, "split.json", HOST),
                decode_chrome_python(plain, "split.json", HOST))
    assert kept == [1]


# ---- fuzzed variants of a real Kineto trace ------------------------------------------------------
class Raw(str):
    """JSON text written as it is: numbers, escapes and spellings json.dumps would not make."""


class Pairs(list):
    """A JSON object as its (key, value) members in order; a key may repeat (the last wins)."""


NAMES = ("aten::mm", 'say "hi"', "back\\slash", "two\nlines", "caf\u00e9", "smile \U0001F600",
         "lone \ud800", "", " padded ", "nul\x00", "ProfilerStep#1",
         Raw('"caf\\u00e9"'), Raw('"aten\\u003a:mm"'), Raw('"\\/slash"'),
         Raw('"\\ud83d\\ude00"'), Raw('"\\ud800"'), Raw('"\\uDFFF"'), Raw('"tab\\t"'),
         5, -1.5, None, True, [1, "a"], {"k": 1})
"""Names and categories: escapes, non-ASCII, lone surrogates, one name spelled two ways
(`caf\\u00e9` and `café`, `aten::mm` with an escaped colon), and values that are not text."""
IDS = (28145, 0, 1, -1, -2**63, 2**63 - 1, 2**63, 2**64 + 3, 10**30, "28145", "Traces", "",
       "caf\u00e9", Raw('"\\u0031"'), 1.0, 1.5, -0.0, float("nan"), float("inf"), None, True,
       False, [1, 2], {"a": 1}, Raw("1e2"), Raw("28145.0"), Raw("-0"))
"""pids, tids and flow ids of every JSON type and size."""
ARG_VALUES = (0, 1, -1, 7, 2**63 - 1, 2**63, 2**64 + 5, -2**70, 1.5, -0.0, 1e300, True, False,
              None, "12", "", 'x"y', "caf\u00e9", [1, [2, {}]], {"a": {"b": [None, 1.5]}},
              [[1, 2], []], Raw("1e3"), Raw("1.0"), Raw("-0"), Raw("NaN"), Raw("-Infinity"),
              Raw("123456789012345678901234567890"), Raw("0.10000000000000000555"))
ARG_KEYS = (*HOT_ARGS, "grid", "block", "Input Dims", "est. achieved occupancy %", "name",
            "labels", "Call stack", "caf\u00e9", "", Raw('"\\u0063orrelation"'),
            Raw('"External\\u0020id"'), Raw('"a\\"b"'))
SPACES = ("", "", "", " ", "\n", "\n    ", "\t", "\r\n")
ESCAPED_BP = (Raw('"\\u0065"'),)
"""bp "e" spelled with an escape (test_flow_keys_and_bp_...)."""
ESCAPED_FLOW_CATS = ("caf\u00e9", Raw('"f\\u0077dbwd"'))
"""Flow categories that json.dumps writes with escapes (`caf\\u00e9`), or spelled so by hand."""


def _time(rng: random.Random, near: Decimal) -> Any:
    """A `ts` near `near` (or far from it), written in one of the many ways JSON allows."""
    whole = int(near) + rng.randrange(-50, 50)
    kind = rng.randrange(16)
    if kind == 0:
        return whole
    if kind <= 4:  # 0-12 fraction digits
        digits = rng.randrange(13)
        return Raw(f"{whole}.{rng.randrange(10**digits):0{digits}d}" if digits else str(whole))
    if kind <= 6:  # half to even below the picosecond, a carry into the microsecond
        return Raw(f"{whole}." + rng.choice(("0000005", "0000015", "00000050001", "0000025",
                                             "9999995", "9999994999", "0000004999999")))
    if kind == 7:  # exponents
        return Raw(rng.choice((f"{whole}e0", f"{whole}0E-1", f"{Decimal(whole) / 1000}e3",
                               "1e3", "1.5E-2", f"{whole}.5e+0")))
    if kind == 8:  # negative, huge
        return Raw(rng.choice(("-0.0000005", "-0.0000015", "-12.345", "-0", "1e300",
                               "12345678901234567", "123456789012345678901234567890",
                               f"{whole}000000", "-1e300")))
    if kind == 9:
        return rng.choice((Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), None, True,
                           f"{whole}.5", f" {whole} ", "abc", "1e3", [whole]))
    return Raw(f"{whole}.{rng.randrange(1000):03d}")


def _duration(rng: random.Random) -> Any:
    return rng.choice((0, 3, Raw("0.0"), Raw("-0"), Raw("12.3456789"), Raw("1.0000005"),
                       Raw("0.0000015"), Raw("-1.5"), Raw("1e2"), Raw("2.5E1"), Raw("1e300"),
                       Raw("3000000000000"), Raw("9300000000000.5"),
                       Raw("1234567890123456789012345"), Raw("NaN"), Raw("Infinity"), "5",
                       None, True, Raw("7.25"), 40, Raw("15.000000000001")))


def _args(rng: random.Random) -> Any:
    """An args object: hot and other keys, escaped keys, repeats, nested values."""
    members = [(rng.choice(ARG_KEYS), rng.choice(ARG_VALUES)) for _ in range(rng.randrange(6))]
    if members and rng.random() < 0.3:
        members.append((members[0][0], rng.choice(ARG_VALUES)))  # the last one wins
    if rng.random() < 0.6:
        return Pairs(members)
    return {str(k): v for k, v in members if not isinstance(k, Raw)}


def _slices(events: list) -> list[dict]:
    return [ev for ev in events if isinstance(ev, dict) and ev.get("ph") == "X"]


def _escaped(text: str) -> str:
    """The start of a JSON string with every character of `text` written as \\uXXXX."""
    units = text.encode("utf-16-be", "surrogatepass")
    return '"' + "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def _mutate(rng: random.Random, events: list, near: Decimal) -> None:
    """One change of a kind a writer, an editor or a crash makes."""
    kind = rng.randrange(17)
    ev = rng.choice(events) if events else None
    if not isinstance(ev, dict):
        return
    if kind == 0:  # any phase, or none
        ev["ph"] = rng.choice(("X", "B", "E", "i", "I", "n", "C", "M", "s", "t", "f", "b", "e",
                               "", "XX", "x", Raw('"\\u0058"'), 5, None))
    elif kind == 1:  # B/E pairs, nested, unbalanced, reversed
        x = rng.choice(_slices(events) or [ev])
        begin = {**x, "ph": "B"}
        begin.pop("dur", None)
        end = {"ph": "E", "pid": x.get("pid"), "tid": x.get("tid"),
               "ts": _time(rng, near) if rng.random() < 0.5 else x.get("ts")}
        if rng.random() < 0.3:
            end["args"] = _args(rng)
        pair = rng.choice(([begin, end], [begin], [end], [end, begin], [begin, begin, end]))
        at = events.index(x) if x in events else 0
        events[at:at] = pair
        if rng.random() < 0.5 and x in events:
            events.remove(x)
    elif kind == 2:  # counters with several values
        values = {k: rng.choice((1, 2.5, "3", True, float("nan"), None, -4, 2**70, Raw("1e2")))
                  for k in rng.sample(("a", "b", "c", "bytes", "caf\u00e9"), rng.randrange(1, 4))}
        events.insert(rng.randrange(len(events) + 1), {
            "ph": "C", "name": rng.choice(("Memory", "", None, "caf\u00e9")),
            "pid": rng.choice(IDS[:4]), "ts": _time(rng, near),
            "args": values if rng.random() < 0.9 else rng.choice(([1], "x", None))})
    elif kind == 3:  # metadata of every kind
        what = rng.choice(("process_name", "thread_name", "process_labels", "process_sort_index",
                           "thread_sort_index", "unknown"))
        value = rng.choice(("GPU 0", "stream 7 ", "caf\u00e9", 3, -2.5, "4", "x", None,
                            float("nan"), [1]))
        args = rng.choice(({"name": value}, {"labels": value}, {"sort_index": value}, [value],
                           None, {}))
        events.insert(rng.randrange(len(events) + 1), {
            "ph": "M", "name": what, "pid": rng.choice(IDS[:5]), "tid": rng.choice(IDS[:5]),
            "args": args})
    elif kind == 4:  # flows: ids of every type, id2, bp, categories
        a, b = rng.choice(_slices(events) or [ev]), rng.choice(_slices(events) or [ev])
        flow_id = rng.choice((rng.randrange(100), rng.randrange(100), "0x1a", 2**64, -5, 1.0,
                              2.5, True, None, Raw('"f1"'), "f1"))
        cat = rng.choice(("fwdbwd", "ac2g", None, 5, "x\"y", "tab\t"))
        for ph, x in (("s", a), ("t", rng.choice((a, b))), ("f", b))[rng.randrange(2):]:
            point = {"ph": ph, "id": flow_id, "pid": x.get("pid"), "tid": x.get("tid"),
                     "ts": x.get("ts"), "cat": cat, "name": cat}
            if rng.random() < 0.2:
                point["id2"] = rng.choice(({"local": "0x1"}, {"global": 7}, 5))
            if rng.random() < 0.15:
                point.pop("id")
            if ph == "f" and rng.random() < 0.6:
                point["bp"] = rng.choice(("e", "s", None, 1, *ESCAPED_BP))
            if rng.random() < 0.2 and ESCAPED_FLOW_CATS:
                point["cat"] = rng.choice(ESCAPED_FLOW_CATS)
            events.insert(rng.randrange(len(events) + 1), point)
    elif kind == 5:
        ev[rng.choice(("pid", "tid"))] = rng.choice(IDS)
    elif kind == 6:
        ev[rng.choice(("name", "cat"))] = rng.choice(NAMES)
    elif kind in (7, 8):
        ev["ts"] = _time(rng, near)
    elif kind == 9:
        ev["dur"] = _duration(rng)
    elif kind in (10, 11):
        ev["args"] = _args(rng) if rng.random() < 0.85 else rng.choice(([1, 2], "x", 5, None, {}))
    elif kind == 12:  # not events: {}, other JSON values
        events.insert(rng.randrange(len(events) + 1),
                      rng.choice(({}, {}, 5, "x", None, [], [1, 2, 3, 4], True, {"foo": 1})))
    elif kind == 13:  # a field written twice, or with an escaped key
        members = Pairs(ev.items())
        field = rng.choice(("ph", "ts", "name", "args", "pid", "dur", "cat"))
        value = {"ph": "B", "ts": "abc", "name": 7, "args": {"correlation": 1}, "pid": 1.5,
                 "dur": -1, "cat": None}[field]
        members.insert(0 if rng.random() < 0.7 else len(members), (field, value))
        if rng.random() < 0.3:
            members.append((Raw(rng.choice(('"p\\u0068"', '"\\u0074s"', '"na\\u006de"'))),
                            ev.get("ph", "X")))
        events[events.index(ev)] = members
    elif kind == 14:  # a field dropped
        ev.pop(rng.choice(("ph", "ts", "dur", "pid", "tid", "name", "cat", "args", "id")), None)
    elif kind == 15:  # a name spelled another way, on some of the events holding it
        name = ev.get("name")
        if isinstance(name, str) and name:
            spelled = Raw(_escaped(name[:3]) + json.dumps(name[3:])[1:] if rng.random() < 0.5
                          else json.dumps(name, ensure_ascii=rng.random() < 0.5))
            for other in rng.sample(events, min(len(events), 5)):
                if isinstance(other, dict) and other.get("name") == name:
                    other["name"] = spelled
    else:  # many events at once: one field over a fifth of them
        field, values = rng.choice((("ts", None), ("pid", IDS), ("name", NAMES),
                                    ("args", None), ("dur", None)))
        for other in rng.sample(events, len(events) // 5):
            if isinstance(other, dict):
                other[field] = (_time(rng, near) if field == "ts" else _args(rng)
                                if field == "args" else _duration(rng) if field == "dur"
                                else rng.choice(values))


HEADER_VALUES = {
    "schemaVersion": (1, "1"),
    "baseTimeNanoseconds": (1790857026000000000, 1.79e18, Raw("1790857026000000000.0"),
                            "1790857026000000000", " 17 ", "x", 1.5, None, -5, 2**70, [1],
                            Raw("1.7908570260000000001e18")),
    "distributedInfo": ({"rank": 3, "backend": "nccl", "world_size": 8}, "rank 3", None,
                        {"rank": "x"}),
    "deviceProperties": ([{"id": 0, "name": "A100", "totalGlobalMem": 85}], [{"id": "0"}],
                         [5, None], {}),
    "displayTimeUnit": ("ns", "ms"),
    "traceName": ("caf\u00e9", Raw('"caf\\u00e9"')),
    "junk": ({"a": [1, {"b": float("nan")}]}, [], Raw("-1e400")),
}


def _document(rng: random.Random, events: list) -> Any:
    """The events in a document: a bare list, or an object with header members on both sides
    of `traceEvents`."""
    if rng.random() < 0.12:
        return events
    before, after = [], []
    for key in rng.sample(sorted(HEADER_VALUES), rng.randrange(len(HEADER_VALUES) + 1)):
        (before if rng.random() < 0.5 else after).append((key, rng.choice(HEADER_VALUES[key])))
    if rng.random() < 0.05:  # a member written twice: the last wins
        key = rng.choice(sorted(HEADER_VALUES))
        after.append((key, rng.choice(HEADER_VALUES[key])))
    if rng.random() < 0.03:  # a second event list: the Python reader's (json.loads keeps it)
        after.append(("traceEvents", events[:2]))
    return Pairs([*before, ("traceEvents", events), *after])


def _has_raw(value: Any) -> bool:
    if isinstance(value, (Raw, Pairs)):
        return True
    if isinstance(value, dict):
        return any(_has_raw(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_raw(v) for v in value)
    return False


def _write(value: Any, rng: random.Random, ascii_only: bool) -> str:
    """JSON text by hand: Raw as written, Pairs with repeats, random whitespace anywhere."""
    def space() -> str:
        return rng.choice(SPACES)
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, (Pairs, dict)):
        members = value if isinstance(value, Pairs) else list(value.items())
        return "{" + space() + ("," + space()).join(
            f"{_write(k if isinstance(k, Raw) else str(k), rng, ascii_only)}{space()}:{space()}"
            f"{_write(v, rng, ascii_only)}" for k, v in members) + space() + "}"
    if isinstance(value, list):
        return "[" + space() + ("," + space()).join(
            _write(v, rng, ascii_only) for v in value) + space() + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def _text(doc: Any, rng: random.Random) -> bytes:
    """A document's bytes: json.dumps (any indent) where it can spell it, else by hand."""
    ascii_only = rng.random() < 0.5
    if _has_raw(doc):
        text = _write(doc, rng, ascii_only)
    else:
        text = json.dumps(doc, ensure_ascii=ascii_only, indent=rng.choice((None, 0, 2, "\t")),
                          separators=rng.choice((None, (",", ":"))))
    return text.encode("utf-8", "surrogatepass")


@lru_cache(maxsize=1)
def _kineto_events() -> tuple[str, ...]:
    """The events of a real Kineto trace (CPU ops, user annotations, flows, metadata), each as
    its JSON text (so every variant starts from fresh objects)."""
    doc = json.loads(gzip.decompress(TINY_MLP.read_bytes()))
    return tuple(json.dumps(ev) for ev in doc["traceEvents"])


def _variant(rng: random.Random) -> bytes:
    """A run of the real trace's events (its metadata first, mostly), a few changes made."""
    texts = _kineto_events()
    start = rng.randrange(len(texts) - 40)
    chosen = texts[start:start + rng.randrange(3, 40)]
    if rng.random() < 0.7:
        chosen = texts[:8] + chosen  # the process and thread names
    events = [json.loads(t) for t in chosen]
    near = Decimal(str(next(ev["ts"] for ev in events if "ts" in ev)))
    for _ in range(rng.randrange(1, 6)):
        _mutate(rng, events, near)
    text = rng.choice(SPACES).encode() + _text(_document(rng, events), rng) \
        + rng.choice(SPACES).encode()
    return b"\xef\xbb\xbf" + text if rng.random() < 0.03 else text  # a byte-order mark


FUZZ_SEEDS = range(8)
FUZZ_VARIANTS = 25
"""8 x 25 documents, each plain and gzipped: 400 decodes by each reader."""


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_fuzzed_variants_decode_as_the_python_reader_does(seed):
    """Every variant: the oracle's trace (or its error), or handed back to it. Most must be
    read by the scanner itself (the rest are shapes it leaves to Python), else this would test
    nothing."""
    rng = random.Random(seed)
    scanned = 0
    for k in range(FUZZ_VARIANTS):
        data = _variant(rng)
        for form in (data, _gz(data)):
            try:
                got = assert_decodes_alike(form, "fuzz.json")
            except AssertionError as exc:
                raise AssertionError(f"seed {seed}, variant {k}: {data[:3000]!r}") from exc
            scanned += got is not None
    assert scanned >= FUZZ_VARIANTS


# ---- shapes the scanner hands back, mismatches known ----------------------------------------------
@pytest.mark.parametrize("text", [
    b"\xef\xbb\xbf" + b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}]}',
    b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "args": {"a": ' + b"[" * 450
    + b"]" * 450 + b"}}]}",
    b'{"traceEvents": [{"ph": "X", "ts": 1}], "traceEvents": [{"ph": "X", "ts": 5}]}',
    b'{"traceEvents": {"ph": "X", "ts": 1}}',
    b'[{"ph": "X", "ts": 1, "dur": 2}, 5]',
    b'[[1, 2, 3, 4]]',
    b'"traceEvents"',
    b"{}",
], ids=["byte-order mark", "nested 450 deep", "two event lists", "events not a list",
        "a list with a non-event", "rows of numbers", "a string", "no event list"])
def test_shapes_the_scanner_leaves_to_the_python_reader(text):
    """Valid JSON the scanner does not read goes to the Python reader whole (json.loads keeps
    the last `traceEvents`, reads a byte-order mark, follows any depth, names non-traces)."""
    assert scan_chrome(text, "odd.json", HOST) is None
    want = _outcome(decode_chrome_python, text, "odd.json")
    got = _outcome(decode_chrome, text, "odd.json")
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_array_equal(got.start_ps, want.start_ps)


FLOWS = ('{"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "name": "a"}, '
         '{"ph": "X", "pid": 1, "tid": 1, "ts": 20, "dur": 10, "name": "b"}, '
         '{"ph": "X", "pid": 1, "tid": 1, "ts": 40, "dur": 10, "name": "c"}, '
         '{"ph": "s", "id": %s, "pid": 1, "tid": 1, "ts": 5, "cat": %s}, '
         '{"ph": "f", "id": %s, "pid": 1, "tid": 1, "ts": %s, "cat": %s, "bp": %s}]}')
"""Three slices and a flow from the first into the second (an `f` binds to the slice that
encloses it with bp "e", else to the next one, the third)."""


@pytest.mark.parametrize("fields", [
    pytest.param(("1", '"fwdbwd"', "1", "25", '"fwdbwd"', '"e"'), id="plain"),
    pytest.param(("1", '"caf\\u00e9"', "1", "25", '"caf\\u00e9"', '"e"'), id="escaped cat"),
    pytest.param(("1", '"fwdbwd"', "1", "2.5e1", '"fwdbwd"', '"e"'), id="f parsed in Python"),
    pytest.param(("1", '"fwdbwd"', "1", "25", '"fwdbwd"', '"\\u0065"'), id="bp escaped"),
    pytest.param(("1", '"caf\\u00e9"', "1", "2.5e1", '"caf\\u00e9"', '"e"'),
                 id="escaped cat, f parsed in Python"),
    pytest.param(('"\\u00e9"', "null", '"\\u00e9"', "2.5e1", "null", '"e"'),
                 id="escaped id, f parsed in Python"),
    pytest.param(("1", '"ab"', "1", "25", '"a\\u0062"', '"e"'), id="cat spelled two ways"),
])
def test_flow_keys_and_bp_as_the_python_reader_reads_them(fields):
    """Flow ids, categories and bp written with escapes, or with one point read by the scanner
    and the other parsed in Python (an exponent in its ts): the Python reader's edges."""
    text = (FLOWS % fields).encode()
    assert assert_decodes_alike(text, "flows.json") is not None
    assert decode_chrome_python(text, "flows.json", HOST).flow_edges.shape[0] == 1


# ---- degrade, don't die --------------------------------------------------------------------------
DAMAGED = SMALL_TRACES[0]
"""A Kineto trace (GPU kernels, flows, metadata; deviceProperties before `traceEvents`, logs and
traceName after), damaged in the tests below."""


def _cuts(plain: bytes) -> dict[str, int]:
    """Where a crash or a copy cuts a trace: in the header, inside a string, inside a number,
    between events, after the array, before the final `}`, and an even spread."""
    events = plain.index(b'"traceEvents"')
    opening = plain.index(b"[", events)
    after = json.JSONDecoder().raw_decode(plain.decode("latin-1"), opening)[1]
    name = re.compile(rb'"name": *"').search(plain, events + 200).end() + 3
    number = re.compile(rb'"ts": *\d').search(plain, events + 200).end() + 4
    fraction = plain.index(b".", number)
    between = plain.index(b"},", events + 200) + 2
    cuts = {"in the header": events // 2, "at the event list": events + 16,
            "mid-string": name, "mid-number": number, "mid-fraction": fraction + 2,
            "between events": between, "after the array": after,
            "without the final }": len(plain.rstrip()) - 1}
    cuts.update({f"at {k}": k for k in range(7, len(plain) - 2, len(plain) // 23)})
    return cuts


def _names_the_file(outcome: Any, source: str) -> bool:
    """The error, or the trace's (single) warning, starts with the file's name."""
    if isinstance(outcome, str):
        return outcome.startswith(f"{source}: ")
    return len(outcome.warnings) == 1 and outcome.warnings[0].startswith(f"{source}: ")


def _bad_utf8(plain: bytes) -> dict[str, tuple[bytes, int]]:
    """The trace with bytes that are not UTF-8 inside an event's name and inside its args:
    (text, offset of the first bad byte)."""
    events = plain.index(b'"traceEvents"')
    name = re.compile(rb'"name": *"[^"]{6}').search(plain, events + 200).end() - 3
    arg = re.compile(rb'"args": *\{[^}]*?: *"[^"]{4}').search(plain, events + 200).end() - 2
    return {"name": (plain[:name] + b"\xff" + plain[name + 1:], name),
            "args": (plain[:arg] + b"\xc3\x28" + plain[arg + 2:], arg),
            "both": (plain[:name] + b"\xe2\x82" + plain[name + 2:arg] + b"\xed\xa0"
                     + plain[arg + 2:], name)}


def _damaged(plain: bytes) -> dict[str, bytes]:
    """The trace damaged every way below but a cut gzip stream (_cut_gzip), by name."""
    gz = _gz(plain)
    out = {f"cut {where}": plain[:at] for where, at in _cuts(plain).items()}
    out.update({f"cut {where}, gzipped": _gz(plain[:at])
                for where, at in list(_cuts(plain).items())[:8]})
    out.update({f"gzip byte {k} flipped": gz[:k] + bytes([gz[k] ^ 0x5A]) + gz[k + 1:]
                for k in (len(gz) // 3, len(gz) // 2, len(gz) - 6, len(gz) - 2)})
    out.update({f"trailing {junk!r}": plain + junk for junk in (b"x", b"]", b"{}", b"\x00")})
    return out


def _cut_gzip(plain: bytes) -> dict[str, bytes]:
    """The gzipped trace cut short: in its header, mid-stream, without its 8-byte trailer."""
    gz = _gz(plain)
    return {f"gzip cut at {k}": gz[:k]
            for k in (5, 20, *range(100, len(gz) - 8, len(gz) // 9), len(gz) - 8)}


def test_damaged_small_files_decode_as_the_python_reader_does():
    """Small damaged files go to the Python reader, whose salvage (the events before the
    damage) and messages are the reference; each result names the file."""
    source = str(DAMAGED)
    plain = _plain(DAMAGED.read_bytes())
    for what, data in {**_damaged(plain), **_cut_gzip(plain)}.items():
        want = _outcome(decode_chrome_python, data, source)
        assert scan_chrome(data, source, HOST) is None, what
        got = _outcome(decode_chrome, data, source)
        assert_same(got, want)
        assert _names_the_file(got, source), what


def test_bytes_that_are_not_utf8_are_read_by_the_scanner_with_the_first_named():
    """A bad byte in a name or in args is no damage: the scanner reads the file itself, gives
    the oracle's trace (U+FFFD for the bad bytes) and one warning naming the first bad byte."""
    source = str(DAMAGED)
    for what, (plain, at) in _bad_utf8(_plain(DAMAGED.read_bytes())).items():
        for data in (plain, _gz(plain)):
            got = scan_chrome(data, source, HOST)
            assert got is not None, what
            assert_same(got, decode_chrome_python(data, source, HOST))
            assert _names_the_file(got, source), what
            assert f"(the first at byte {at})" in got.warnings[0], what


class _EventsOnly(_Sampled):
    """A HostTrace without what a salvage may read of the header (the scanner keeps the members
    before the damage, the Python reader none): no warnings, base_ns 0, sections by name and
    kind."""

    def __init__(self, trace: Any):
        super().__init__(trace, np.arange(trace.n_events))
        self.warnings: list[str] = []
        self.base_ns = 0
        self.sections = [(s.name, s.kind) for s in trace.sections]


def _assert_salvage_keeps_the_python_readers_events(damaged: dict[str, bytes]) -> None:
    """Each damaged file's scanner salvage against the Python reader's: the same events (and
    their args, tracks, names, flows), a warning naming the file and the same count of events
    kept; where nothing is kept, an error naming the file from both."""
    source = str(DAMAGED)
    for what, data in damaged.items():
        want = _outcome(decode_chrome_python, data, source)
        got = _outcome(scan_chrome, data, source)
        if isinstance(want, str):
            assert isinstance(got, str) and got.startswith(f"{source}: "), (what, got)
            continue
        assert got is not None and not isinstance(got, str), (what, got)
        assert_same_trace(_EventsOnly(got), _EventsOnly(want))
        assert _names_the_file(got, source), what
        kept = re.search(r"kept the \d+ complete events|$", want.warnings[0]).group()
        assert kept in got.warnings[0], (what, got.warnings, want.warnings)
        if "gzip stream" in want.warnings[0]:
            assert "gzip stream" in got.warnings[0], (what, got.warnings)


def test_damaged_large_files_keep_the_events_the_python_reader_keeps(monkeypatch):
    """Above PYTHON_LIMIT_BYTES the scanner salvages alone (a cut, a corrupt gzip stream,
    trailing garbage): the complete events before the damage, as the Python reader would."""
    monkeypatch.setattr(chrome_scan, "PYTHON_LIMIT_BYTES", -1)  # even an empty gunzip
    damaged = _damaged(_plain(DAMAGED.read_bytes()))
    _assert_salvage_keeps_the_python_readers_events(damaged)
    assert sum(not isinstance(_outcome(decode_chrome_python, d, "f"), str)
               for d in damaged.values()) >= 20


def test_cut_gzip_streams_of_large_files_keep_the_events_the_python_reader_keeps(monkeypatch):
    """A gzip stream cut short (a copy that stopped, a crash while writing): every complete
    event before the cut, as the Python reader's zlib prefix keeps them."""
    monkeypatch.setattr(chrome_scan, "PYTHON_LIMIT_BYTES", -1)
    _assert_salvage_keeps_the_python_readers_events(_cut_gzip(_plain(DAMAGED.read_bytes())))


def test_large_files_damaged_before_any_event_raise_naming_the_file(monkeypatch):
    monkeypatch.setattr(chrome_scan, "PYTHON_LIMIT_BYTES", -1)
    plain = _plain(DAMAGED.read_bytes())
    first = plain.index(b"{", plain.index(b'"traceEvents"'))
    source = str(DAMAGED)
    for data in (plain[:first // 2], plain[:first + 30], _gz(plain[:first + 30]),
                 _gz(plain)[:40]):
        with pytest.raises(ProfileError) as error:
            scan_chrome(data, source, HOST)
        assert str(error.value).startswith(f"{source}: ")


def test_a_tid_in_decimal_text_is_the_thread_of_that_number(tmp_path):
    """PyTorch 1.8 writes an op's tid as text ("25738") and its memory events' as a number: one
    thread, in both readers (a tid that is not plain decimal text stays text)."""
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": "25738", "args": {"name": "main"}},
        {"ph": "X", "name": "aten::add", "pid": "1", "tid": "25738", "ts": 10, "dur": 5},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 25738, "ts": 12, "s": "t",
         "args": {"Bytes": 64}},
        {"ph": "X", "name": "other", "pid": 1, "tid": "0x7", "ts": 20, "dur": 1},
        {"ph": "X", "name": "padded", "pid": 1, "tid": "007", "ts": 30, "dur": 1}]
    data = json.dumps({"traceEvents": events}).encode()
    assert_decodes_alike(data, "t.json")
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(data)
    profile = xw.open_profile(path)
    names = profile.display_names[profile.meta]
    track = profile.track_of(np.arange(profile.n_events))
    by_name = dict(zip(names.tolist(), track.tolist(), strict=True))
    assert by_name["aten::add"] == by_name["[memory]"]
    assert len({by_name["aten::add"], by_name["other"], by_name["padded"]}) == 3
