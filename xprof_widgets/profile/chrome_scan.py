"""The compiled path for Chrome trace JSON: bytes -> the scanner's columns -> ChromeBuilder.

A plain `.json` is scanned where it lies (a read-only mapping, released as the scan passes),
a large one in two parts on two cores, and its events' args stay ranges of the file. A `.json.gz` is decompressed on a second thread,
piece by piece, while the scanner reads the previous piece; the args bytes are copied out as it
goes, so the whole text is never held. The few events the scanner leaves to Python (metadata,
B/E pairs, counters, odd shapes) are parsed one by one into the same builder.

`scan_chrome` returns None where the Python reader must decide instead: shapes the scanner does
not read (a document without `traceEvents`, a list of non-events), and damaged files small
enough for it; a damaged large file keeps the events before the damage, with a warning.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._native import chrome_scan as native
from .chrome_args import HOT_ARGS, ChromeArgs
from .chrome_build import (
    ChromeBuilder,
    FlowPoints,
    Rows,
    concat_flow_points,
    concat_rows,
    same_id,
)
from .chrome_header import apply_header
from .chrome_time import parse_float
from .mapped import prefault, release
from .trace_data import HostTrace

try:  # isal inflates twice as fast as zlib here (docs/pytorch.md)
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
    import zlib as _zlib

PYTHON_LIMIT_BYTES = 64 << 20
"""Damaged files up to this size (uncompressed) are read by the Python reader, whose salvage
and messages are the reference; its objects take about 10x the JSON text, so larger ones keep
the scanner's salvage (the events before the damage, with its own message)."""
_WINDOW = 64 << 20
"""Bytes of a mapped file scanned per call, each released after (plain files)."""
_PARALLEL_BYTES = 128 << 20
"""Plain files from this size are scanned in two parts at once (on two cores)."""
_PIECE = 8 << 20
"""Decompressed bytes handed to the scanner per call (gzip), at most."""
_COMPRESSED_CHUNK = 1 << 20
_GZIP_WBITS = 31  # a gzip header and trailer around deflate data
_MIN_EVENT_BYTES = 64
"""Fewer bytes than Kineto's or jax's smallest events take (column room is reserved by it)."""
_BAD_UTF8 = "bytes that are not UTF-8 (the first at byte {at}) were read as U+FFFD"


def scan_chrome(data: Any, source: str, host: str) -> HostTrace | None:
    """The HostTrace of a Chrome trace (bytes or a mapping, gzipped or not), or None where
    the Python reader must take it (see the module's docstring)."""
    gz = data[:2] == b"\x1f\x8b"
    parts, status, damage, size = _scan_gzip(data) if gz else _scan_plain(data)
    lead, last = parts[0], parts[-1]
    if status == native.FALLBACK or (status == native.DONE and not lead.seen_events):
        return None
    if damage is None and status == native.ERROR:
        damage = f"the JSON breaks off at byte {last.error_at} ({last.error})"
    if damage is not None and size <= PYTHON_LIMIT_BYTES:
        return None
    builder = ChromeBuilder(source, host)
    n_events = sum(part.n_events for part in parts)
    errors = "surrogatepass"
    bad_utf8 = [part.bad_utf8_at for part in parts if part.bad_utf8_at >= 0]
    if bad_utf8:
        errors = "replace"
        builder.notes.append(_BAD_UTF8.format(at=bad_utf8[0]))
    if damage is not None:
        builder.notes.append(f"{damage}: kept the {n_events} complete events before it; "
                             "copy the file again or capture a new profile for the rest")
    apply_header(builder, _header([pair for part in parts for pair in part.header], errors))
    offsets = np.cumsum([0] + [part.n_events for part in parts]).tolist()
    for part, offset in zip(parts, offsets):
        if not _add_others(builder, part, offset, errors):
            return None
    builder.n_events = n_events
    args = ChromeArgs(lead.args_blob() if gz else data, errors)
    rows, flows = _columns(builder, parts, offsets, errors)
    return builder.finish(args, rows, flows)


# ---- reading the bytes -------------------------------------------------------------------------
def _scanner(gz: bool, size: int) -> Any:
    return native.Scanner([k.encode() for k in HOT_ARGS], copy_args=gz,
                          expect_events=size // _MIN_EVENT_BYTES)


def _scan_plain(data: Any) -> tuple[list, int, str | None, int]:
    """Scans the bytes; a large file in two parts on two threads, the second from an events
    list element found past the middle, taken when the first part's scan ends exactly there
    (else the first scanner goes on alone)."""
    size = len(data)
    lead = _scanner(False, size)
    split = _split_point(data) if size >= _PARALLEL_BYTES and (os.cpu_count() or 1) > 1 \
        else None
    if split is None:
        return [lead], _scan_range(lead, data, 0, size, True)[0], None, size
    tail = _scanner(False, size - split)
    tail.start_in_events(data[_first_byte(data)] == ord("["))
    tail_result: list = []
    worker = threading.Thread(target=lambda: tail_result.append(
        _scan_range(tail, data, split, size, True)), name="xprof-widgets-scan", daemon=True)
    worker.start()
    status, pos = _scan_range(lead, data, 0, split, False)
    worker.join()
    if status == native.NEED_MORE and pos == split and lead.at_event and tail_result:
        return [lead, tail], tail_result[0][0], None, size
    if status == native.NEED_MORE:  # the guess was inside an event: the lead reads on
        status, _ = _scan_range(lead, data, pos, size, True)
    return [lead], status, None, size


def _scan_range(scanner: Any, data: Any, start: int, end: int, final: bool) -> tuple[int, int]:
    """Scans data[start:end] in windows, each prefaulted before and its pages handed back
    after (a mapping); (status, where the scan stopped)."""
    view = memoryview(data)
    pos, window = start, _WINDOW
    while True:
        stop = min(end, pos + window)
        prefault(data, pos, stop)
        status, consumed = scanner.feed(view[pos:stop], pos, final and stop == end)
        if consumed:
            release(data, pos, pos + consumed)
        pos += consumed
        if status != native.NEED_MORE or (stop == end and not final):
            return status, pos
        if consumed == 0:
            window *= 2  # one event larger than the window


_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


def _split_point(data: Any) -> int | None:
    """Where, past the middle, an element of the events list seems to start: just after the
    comma between two objects (checked by the first scanner, which must end exactly there)."""
    found = _BOUNDARY.search(memoryview(data), len(data) // 2, len(data) // 2 + _WINDOW)
    if found is None:
        return None
    return data.find(b",", found.start()) + 1


def _first_byte(data: Any) -> int:
    """The position of the document's first byte that is not whitespace."""
    head = bytes(data[:4096])
    return len(head) - len(head.lstrip())


def _scan_gzip(data: Any) -> tuple[list, int, str | None, int]:
    """Scans the decompressed pieces as a second thread makes them; what an event leaves over
    at a piece's end goes before the next piece."""
    scanner = _scanner(True, 0)
    carry = b""
    base = 0
    status = native.NEED_MORE
    damage = None
    pieces = _Pieces(data)
    try:
        for piece in pieces:
            buf = carry + piece if carry else piece
            status, consumed = scanner.feed(buf, base, False)
            carry = buf[consumed:]
            base += consumed
            if status != native.NEED_MORE and status != native.DONE:
                break  # (after DONE only whitespace may follow: the rest is read too)
        else:
            damage = pieces.damage
            if status == native.NEED_MORE:
                status, consumed = scanner.feed(carry, base, True)
                base += consumed
        size = base + len(carry)
        if status == native.ERROR:  # how large is the rest? (the Python reader takes small files)
            for piece in pieces:
                size += len(piece)
                if size > PYTHON_LIMIT_BYTES:
                    break
    finally:
        pieces.stop()
    return [scanner], status, damage, size


class _Pieces:
    """Decompressed pieces of a gzip stream, made on a second thread (isal and zlib let go of
    the GIL while they inflate); `damage` says how the stream broke, when it did."""

    def __init__(self, data: Any):
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._stopped = threading.Event()
        self.damage: str | None = None
        self._pieces = self._take()  # one iterator: a second loop goes on where one stopped
        self._thread = threading.Thread(target=self._make, args=(data,), daemon=True,
                                        name="xprof-widgets-gunzip")
        self._thread.start()

    def _make(self, data: Any) -> None:
        """Inflates the members of the stream one input chunk at a time, each call's output
        bounded: on damage every byte inflated before it has been handed out."""
        view = memoryview(data)
        inflater, fed = _zlib.decompressobj(_GZIP_WBITS), False
        try:
            for at in range(0, len(view), _COMPRESSED_CHUNK):
                pending = view[at:at + _COMPRESSED_CHUNK]
                while len(pending) and not self._stopped.is_set():
                    fed = True
                    piece = inflater.decompress(pending, _PIECE)
                    if piece:
                        self._put(piece)
                    pending = inflater.unconsumed_tail
                    if inflater.eof:  # a member ends; another may follow
                        pending = inflater.unused_data
                        if len(pending) and bytes(pending[:2]) != b"\x1f\x8b":
                            self.damage = "bytes that are not gzip follow the gzip stream"
                            return
                        inflater, fed = _zlib.decompressobj(_GZIP_WBITS), False
            if fed:
                self.damage = "the gzip stream is truncated"
        except MemoryError:
            self._put(MemoryError())
        except Exception as exc:  # noqa: BLE001 - zlib and isal each raise their own
            self.damage = f"the gzip stream is truncated or corrupt ({exc})"
        finally:
            self._put(None)

    def _put(self, item: Any) -> None:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces

    def _take(self) -> Iterator[bytes]:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, MemoryError):
                raise item
            yield item

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


# ---- into the builder --------------------------------------------------------------------------
def _header(pairs: list[tuple[bytes, bytes]], errors: str) -> dict[str, Any]:
    """The top-level members other than `traceEvents`, decoded (the last of a repeated key)."""
    return {json.loads(key.decode("utf-8", errors)):
            json.loads(value.decode("utf-8", errors), parse_float=parse_float)
            for key, value in pairs}


def _add_others(builder: ChromeBuilder, scanner: Any, offset: int, errors: str) -> bool:
    """Parses the events the scanner left to Python into the builder; False where the document
    is a list whose items are not events (the Python reader names what such files are)."""
    events, at, length, blob = scanner.others()
    for index, a, n in zip(events.tolist(), at.tolist(), length.tolist()):
        ev = json.loads(blob[a:a + n].decode("utf-8", errors), parse_float=parse_float)
        if scanner.array_doc and type(ev) is not dict:
            return False
        builder.add(ev, offset + index)
    return True


def _columns(builder: ChromeBuilder, parts: list, offsets: list[int],
             errors: str) -> tuple[Rows, FlowPoints]:
    """The scanners' slice and flow columns in the builder's numbering, part after part."""
    lead = parts[0]
    flow_maps = [None]
    known = lead.n_flow_keys
    for part in parts[1:]:
        numbers, known = lead.merge_flow_keys(part, known)
        flow_maps.append(numbers)
    builder.known_flows = known
    builder.known_flow = lambda key: _known_flow(parts, flow_maps, key)
    row_offset = 0
    rows, flows = [], []
    for part, offset, flow_map in zip(parts, offsets, flow_maps):
        track_keys, name_keys = part.keys()
        tracks = np.array([builder.track((*_pid_tid(k, errors), False)) for k in track_keys],
                          np.int64).reshape(-1)
        names = np.array([builder.name_row(*_name_cat(k, errors)) for k in name_keys],
                         np.int64).reshape(-1)
        s = part.slices()
        rows.append(Rows(event=s["event"] + offset, track=tracks[s["track"]],
                         name=names[s["name"]], ts_us=s["ts_us"],
                         ts_ps=s["ts_ps"].astype(np.int64), dur_ps=s["dur_ps"],
                         args_at=s["args_at"], args_len=s["args_len"],
                         hot={k: (r + row_offset, v) for k, (r, v) in part.hot().items()}))
        row_offset += s["event"].shape[0]
        f = part.flows()
        key = f["key"] if flow_map is None else flow_map[f["key"]]
        flows.append(FlowPoints(key=key.astype(np.int64), track=tracks[f["track"]],
                                ts_us=f["ts_us"], ts_ps=f["ts_ps"].astype(np.int64),
                                encloses=f["encloses"], event=f["event"] + offset))
    return concat_rows(rows), concat_flow_points(flows)


def _text(raw: bytes, errors: str) -> str:
    """A JSON string's raw bytes (between its quotes) as text."""
    if b"\\" in raw:
        return json.loads('"' + raw.decode("utf-8", errors) + '"')
    return raw.decode("utf-8", errors)


def _parts(key: bytes, errors: str) -> list[Any]:
    """A scanner key's parts: 'i' + int64, 's' + length + raw string, 'n' (none)."""
    out: list[Any] = []
    at = 0
    while at < len(key):
        kind = key[at:at + 1]
        if kind == b"i":
            out.append(int.from_bytes(key[at + 1:at + 9], "little", signed=True))
            at += 9
        elif kind == b"s":
            n = int.from_bytes(key[at + 1:at + 5], "little")
            out.append(_text(key[at + 5:at + 5 + n], errors))
            at += 5 + n
        else:
            out.append(None)
            at += 1
    return out


def _pid_tid(key: bytes, errors: str) -> tuple[Any, Any]:
    pid, tid = _parts(key, errors)
    return same_id(pid), same_id(tid)


def _name_cat(key: bytes, errors: str) -> tuple[str, str | None]:
    category, name = _parts(key, errors)
    return ("" if name is None else name), category


def _known_flow(parts: list, flow_maps: list, key: tuple) -> int:
    """The scanners' number of a flow key parsed in Python, or -1 (the scanner keeps keys
    as written: a category or id spelled with other escapes than the canonical ones reads as
    another flow; writers spell them alike)."""
    category, flow_id, id2 = key
    if id2 is not None or not (category is None or type(category) is str) \
            or not (type(flow_id) is str or type(flow_id) is int) \
            or not -2**63 <= (flow_id if type(flow_id) is int else 0) < 2**63:
        return -1
    raw = b"n" if category is None else _raw_text(category)
    raw += (b"i" + flow_id.to_bytes(8, "little", signed=True) if type(flow_id) is int
            else _raw_text(flow_id))
    for part, flow_map in zip(parts, flow_maps):
        number = part.flow_key_number(raw)
        if number >= 0:
            return number if flow_map is None else int(flow_map[number])
    return -1


def _raw_text(text: str) -> bytes:
    raw = json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    return b"s" + len(raw).to_bytes(4, "little") + raw
