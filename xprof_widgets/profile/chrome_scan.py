"""The compiled path for Chrome trace JSON: bytes -> the scanner's columns -> ChromeBuilder.

A plain `.json` is scanned where it lies (a read-only mapping, released as the scan passes) and
its events' args stay ranges of the file. A `.json.gz` is decompressed on a second thread,
piece by piece, while the scanner reads the previous piece; the args bytes are copied out as it
goes, so the whole text is never held. The few events the scanner leaves to Python (metadata,
B/E pairs, counters, odd shapes) are parsed one by one into the same builder.

`scan_chrome` returns None where the Python reader must decide instead: shapes the scanner does
not read (a document without `traceEvents`, a list of non-events), and damaged files small
enough for it; a damaged large file keeps the events before the damage, with a warning.
"""

from __future__ import annotations

import io
import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._native import chrome_scan as native
from .chrome_args import HOT_ARGS, ChromeArgs
from .chrome_build import ChromeBuilder, FlowPoints, Rows
from .chrome_header import apply_header
from .chrome_time import parse_float
from .mapped import prefault, release

try:  # isal's gunzip measured 3.4 GB/s here against zlib's 0.9 (docs/pytorch.md)
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
    import gzip as _gzip

PYTHON_LIMIT_BYTES = 64 << 20
"""Damaged files up to this size (uncompressed) are read by the Python reader, whose salvage
and messages are the reference; its objects take about 10x the JSON text, so larger ones keep
the scanner's salvage (the events before the damage, with its own message)."""
_WINDOW = 64 << 20
"""Bytes of a mapped file scanned per call, each released after (plain files)."""
_PIECE = 8 << 20
"""Decompressed bytes handed to the scanner per call (gzip)."""
_MIN_EVENT_BYTES = 64
"""Fewer bytes than Kineto's or jax's smallest events take (column room is reserved by it)."""
_BAD_UTF8 = "bytes that are not UTF-8 (the first at byte {at}) were read as U+FFFD"


class _Damage(Exception):
    """The gzip stream broke: `text` says how."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def scan_chrome(data: Any, source: str, host: str) -> Any:
    """The HostTrace of a Chrome trace (bytes or a mapping, gzipped or not), or None where
    the Python reader must take it (see the module's docstring)."""
    gz = data[:2] == b"\x1f\x8b"
    scanner = native.Scanner([k.encode() for k in HOT_ARGS], copy_args=gz,
                             expect_events=0 if gz else len(data) // _MIN_EVENT_BYTES)
    status, damage, size = (_scan_gzip if gz else _scan_plain)(scanner, data)
    if status == native.FALLBACK or (status == native.DONE and not scanner.seen_events):
        return None
    if damage is None and status == native.ERROR:
        damage = f"the JSON breaks off at byte {scanner.error_at} ({scanner.error})"
    if damage is not None and size <= PYTHON_LIMIT_BYTES:
        return None
    builder = ChromeBuilder(source, host)
    errors = "surrogatepass"
    if scanner.bad_utf8_at >= 0:
        errors = "replace"
        builder.notes.append(_BAD_UTF8.format(at=scanner.bad_utf8_at))
    if damage is not None:
        builder.notes.append(f"{damage}: kept the {scanner.n_events} complete events before it; "
                             "copy the file again or capture a new profile for the rest")
    apply_header(builder, _header(scanner.header, errors))
    if not _add_others(builder, scanner, errors):
        return None
    builder.n_events = scanner.n_events
    args = ChromeArgs(scanner.args_blob() if gz else data, errors)
    rows, flows = _columns(builder, scanner, errors)
    return builder.finish(args, rows, flows)


# ---- reading the bytes -------------------------------------------------------------------------
def _scan_plain(scanner: Any, data: Any) -> tuple[int, str | None, int]:
    """Scans the bytes in windows, handing each scanned window's pages back (a mapping)."""
    view = memoryview(data)
    pos, window, size = 0, _WINDOW, len(data)
    status = native.NEED_MORE
    while status == native.NEED_MORE:
        end = min(size, pos + window)
        prefault(data, pos, end)
        status, consumed = scanner.feed(view[pos:end], pos, end == size)
        if status == native.NEED_MORE and consumed == 0:
            window *= 2  # one event larger than the window
        if consumed:
            release(data, pos, pos + consumed)
        pos += consumed
    return status, None, size


def _scan_gzip(scanner: Any, data: Any) -> tuple[int, str | None, int]:
    """Scans the decompressed pieces as a second thread makes them; what an event leaves over
    at a piece's end goes before the next piece."""
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
            if status != native.NEED_MORE:
                break
        else:
            damage = pieces.damage
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
    return status, damage, size


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
        try:
            with _gzip.open(io.BufferedReader(_Reader(data), 1 << 20)) as stream:
                while not self._stopped.is_set():
                    piece = stream.read(_PIECE)
                    if not piece:
                        break
                    self._put(piece)
        except MemoryError:
            self._put(MemoryError())
        except Exception as exc:  # noqa: BLE001 - zlib, isal and gzip each raise their own
            self.damage = f"the gzip stream is truncated or corrupt ({exc})"
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


class _Reader(io.RawIOBase):
    """A file over bytes or a mapping, read without copying it whole."""

    def __init__(self, data: Any):
        self._view = memoryview(data)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, out: Any) -> int:
        n = min(len(out), len(self._view) - self._pos)
        out[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        return n


# ---- into the builder --------------------------------------------------------------------------
def _header(pairs: list[tuple[bytes, bytes]], errors: str) -> dict[str, Any]:
    """The top-level members other than `traceEvents`, decoded (the last of a repeated key)."""
    return {json.loads(key.decode("utf-8", errors)):
            json.loads(value.decode("utf-8", errors), parse_float=parse_float)
            for key, value in pairs}


def _add_others(builder: ChromeBuilder, scanner: Any, errors: str) -> bool:
    """Parses the events the scanner left to Python into the builder; False where the document
    is a list whose items are not events (the Python reader names what such files are)."""
    events, at, length, blob = scanner.others()
    for index, a, n in zip(events.tolist(), at.tolist(), length.tolist()):
        ev = json.loads(blob[a:a + n].decode("utf-8", errors), parse_float=parse_float)
        if scanner.array_doc and type(ev) is not dict:
            return False
        builder.add(ev, index)
    return True


def _columns(builder: ChromeBuilder, scanner: Any, errors: str) -> tuple[Rows, FlowPoints]:
    """The scanner's slice and flow columns in the builder's numbering."""
    track_keys, name_keys = scanner.keys()
    tracks = np.array([builder.track((*_pid_tid(k, errors), False)) for k in track_keys],
                      np.int64).reshape(-1)
    names = np.array([builder.name_row(*_name_cat(k, errors)) for k in name_keys],
                     np.int64).reshape(-1)
    builder.known_flows = scanner.n_flow_keys
    builder.known_flow = lambda key: _known_flow(scanner, key)
    s = scanner.slices()
    hot = scanner.hot()
    rows = Rows(event=s["event"], track=tracks[s["track"]], name=names[s["name"]],
                ts_us=s["ts_us"], ts_ps=s["ts_ps"].astype(np.int64), dur_ps=s["dur_ps"],
                args_at=s["args_at"], args_len=s["args_len"], hot=hot)
    f = scanner.flows()
    flows = FlowPoints(key=f["key"].astype(np.int64), track=tracks[f["track"]], ts_us=f["ts_us"],
                       ts_ps=f["ts_ps"].astype(np.int64), encloses=f["encloses"],
                       event=f["event"])
    return rows, flows


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
    return pid, tid


def _name_cat(key: bytes, errors: str) -> tuple[str, str | None]:
    category, name = _parts(key, errors)
    return ("" if name is None else name), category


def _known_flow(scanner: Any, key: tuple) -> int:
    """The scanner's number of a flow key parsed in Python, or -1 (the scanner keeps keys
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
    return scanner.flow_key_number(raw)


def _raw_text(text: str) -> bytes:
    raw = json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    return b"s" + len(raw).to_bytes(4, "little") + raw
