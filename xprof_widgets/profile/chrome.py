"""Decoding Chrome trace JSON (jax.profiler's `.trace.json.gz`, PyTorch's `.pt.trace.json`).

Processes become sections, threads become tracks, `C` counters become counter tracks and
`s`/`t`/`f` flow events become explicit flow edges (chrome_build.py has the rules). Two readers
serve them: the compiled scanner (chrome_scan.py), which reads every file it can, and the
Python reader here (`json.loads` of the whole document), which takes what the scanner leaves:
files with shapes it does not read and damaged files small enough to parse whole, whose
salvage (every complete event before the damage) and messages it owns. It is also the
scanner's test oracle: both give the same HostTrace.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

from ..errors import ProfileError
from .chrome_args import ChromeArgs
from .chrome_build import ChromeBuilder
from .chrome_header import apply_header
from .chrome_scan import scan_chrome
from .chrome_time import parse_float
from .trace_data import HostTrace

_EXPECTED = 'Expected a Chrome trace: {"traceEvents": [...]} or a JSON array of trace events.'


def decode_chrome(data: Any, source: str, host: str) -> HostTrace:
    """Decodes a Chrome trace (bytes or a mapping, optionally gzipped); `source` names the
    file in errors."""
    if not len(data):
        raise ProfileError(f"{source}: the file is empty (0 bytes). {_EXPECTED}")
    trace = scan_chrome(data, source, host)
    return trace if trace is not None else decode_chrome_python(bytes(data), source, host)


def decode_chrome_python(data: bytes, source: str, host: str) -> HostTrace:
    """The Python reader: the whole document through json.loads, each event through the
    builder."""
    events, damage, header = _load_events(data, source)
    builder = ChromeBuilder(source, host)
    if damage:
        builder.notes.append(damage)
    apply_header(builder, header)
    builder.n_events = len(events)
    for index, ev in enumerate(events):
        builder.add(ev, index)
    return builder.finish(ChromeArgs())


# ---- reading the JSON ---------------------------------------------------------------------------
def _load_events(data: bytes, source: str) -> tuple[list, str, dict]:
    """The event list, a note when only a damaged file's intact start could be read, and the
    document's other keys (the trace's header)."""
    if not data:
        raise ProfileError(f"{source}: the file is empty (0 bytes). {_EXPECTED}")
    gzip_error = None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            gzip_error = exc
            data = _gunzip_prefix(data)
    try:
        doc, damage = _parse(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        events, at = _salvage(data)
        if not events:
            if gzip_error is not None:
                raise ProfileError(f"{source}: the gzip stream is truncated or corrupt "
                                   f"({gzip_error}) and no complete event precedes the damage; "
                                   "copy the file again or capture a new profile.") from exc
            raise ProfileError(f"{source}: not valid JSON ({_reason(exc)}). {_EXPECTED}") from exc
        what = (f"the gzip stream is truncated or corrupt ({gzip_error})" if gzip_error
                else f"the JSON breaks off at character {at} ({_reason(exc)})")
        return events, (f"{what}: kept the {len(events)} complete events before it; copy the "
                        "file again or capture a new profile for the rest"), {}
    if gzip_error is not None:  # the JSON happened to end where the gzip data broke off
        damage = f"the gzip stream is truncated or corrupt ({gzip_error})"
    known = _known_non_trace(doc)
    if known:
        raise ProfileError(f"{source}: {known}")
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if events is None:
            keys = ", ".join(list(map(str, doc))[:5])
            raise ProfileError(f"{source}: a JSON object without a `traceEvents` list (its keys: "
                               f"{keys or 'none'}); this is not a Chrome trace. {_EXPECTED}")
    else:
        events = doc
    header = doc if isinstance(doc, dict) else {}
    if not isinstance(events, list):
        what = "`traceEvents` is" if isinstance(doc, dict) else "the JSON document is"
        raise ProfileError(f"{source}: {what} a {_json_type(events)}, not a list of events; "
                           f"this is not a Chrome trace. {_EXPECTED}")
    return events, damage, header


def _known_non_trace(doc: Any) -> str:
    """What a JSON file that PyTorch's profiler writes beside its traces is, when it is one."""
    if isinstance(doc, dict) and "nodes" in doc and "schema" in doc and "traceEvents" not in doc:
        return ("a PyTorch execution trace (ExecutionTraceObserver's graph of operators), not a "
                "timeline; open the Kineto trace recorded with it (the profiler's "
                "export_chrome_trace or tensorboard_trace_handler output).")
    if (isinstance(doc, list) and doc and all(isinstance(row, list) for row in doc[:100])
            and all(len(row) == 4 and all(type(v) is int for v in row) for row in doc[:100])):
        return ("PyTorch's raw memory timeline (profile.export_memory_timeline: rows of time, "
                "action, bytes, category), not a trace; open the Kineto trace of the same run, "
                "recorded with profile_memory=True, for its memory events.")
    return ""


def _parse(data: bytes) -> tuple[Any, str]:
    try:
        return json.loads(data, parse_float=parse_float), ""
    except UnicodeDecodeError as exc:  # a bad byte in a name: read as a replacement character
        return json.loads(data.decode("utf-8", errors="replace"), parse_float=parse_float), (
            f"bytes that are not UTF-8 (the first at byte {exc.start}) were read as U+FFFD")


def _gunzip_prefix(data: bytes) -> bytes:
    """What a truncated or corrupt gzip stream yields before the damage."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = []
    for at in range(0, len(data), 1 << 20):
        try:
            out.append(inflater.decompress(data[at:at + (1 << 20)]))
        except zlib.error:
            break
        if inflater.eof:
            break
    return b"".join(out)


def _salvage(data: bytes) -> tuple[list, int]:
    """The complete events at the start of a damaged trace and the byte where reading stopped.

    Chrome's trace format lets a writer that crashed leave the closing `]` out; this reads any
    cut-off or corrupted file up to its first unreadable event, top level first.
    """
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    decoder = json.JSONDecoder(parse_float=parse_float)
    pos = _skip_ws(text, 0)
    if text.startswith("[", pos):
        return _salvage_array(text, pos, decoder)
    if not text.startswith("{", pos):
        return [], 0
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] == '"':
        try:
            key, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return [], pos
        pos = _skip_ws(text, pos)
        if not text.startswith(":", pos):
            return [], pos
        pos = _skip_ws(text, pos + 1)
        if key == "traceEvents" and text.startswith("[", pos):
            return _salvage_array(text, pos, decoder)
        try:
            _, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return [], pos
        pos = _skip_ws(text, pos)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
    return [], pos


def _salvage_array(text: str, pos: int, decoder: json.JSONDecoder) -> tuple[list, int]:
    events: list = []
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] != "]":
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        events.append(value)
        pos = _skip_ws(text, end)
        if not text.startswith(",", pos):
            break
        pos = _skip_ws(text, pos + 1)
    return events, pos


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text at byte {exc.start}"
    return str(exc)


def _json_type(value: Any) -> str:
    names = {dict: "JSON object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
