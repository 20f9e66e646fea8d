"""A Chrome trace's per-event args, kept as the JSON bytes they were written as.

Each event's args are a byte range: of the file itself (a mapped plain `.json`), of the args
bytes the scanner copied out of a gzip stream, or of a side buffer holding the args of events
parsed in Python (re-encoded JSON). Nothing is decoded until asked: a details panel decodes one
event's object; a column of one arg finds the key's value range in each object by a compiled
scan and decodes only that value; integer args the tools read often (`correlation`,
`External id`, ...) were pulled into columns while scanning.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .._native.chrome_scan import find_values, gather_values, int_values
from .mapped import MappedFile, ensure_intact

HOT_ARGS = ("correlation", "External id", "external id", "stream", "device", "Bytes", "Addr",
            "Total Allocated", "Total Reserved", "Device Id", "Device Type",
            "registers per thread", "shared memory", "Ev Idx", "Python id", "Python parent id",
            "Record function id", "Sequence number", "Fwd thread id", "queued", "context",
            "Python thread")
"""Integer args the tools read over many events (Kineto's flows, streams, memory events,
kernel launch parameters, op and Python-stack ids): pulled into columns by the scanner."""
_MASK = 0xFFFF_FFFF_FFFF_FFFF


class ChromeArgs:
    """Per-event args as JSON bytes; see the module's docstring."""

    def __init__(self, main: Any = b"", errors: str = "surrogatepass"):
        self._main = main  # bytes, a MappedFile or a uint8 array
        self._side = b""
        self._errors = errors  # "replace" where the file has bytes that are not UTF-8
        self._at = np.zeros(0, np.int64)  # >= 0: into main; < 0: -1 - offset into side
        self._len = np.zeros(0, np.uint32)
        self._hot: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._scan_row = np.zeros(0, np.int64)  # each event's row in the scanner's order, or -1

    def add_side(self, encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Keeps the args of events parsed in Python; their (at, length) for `set_rows`."""
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        offsets = np.zeros(len(encoded), np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        self._side = b"".join(encoded)
        return -1 - offsets, lengths

    def set_rows(self, at: np.ndarray, length: np.ndarray,
                 hot: dict[str, tuple[np.ndarray, np.ndarray]], scan_row: np.ndarray) -> None:
        """Each event's args range; the pulled-out integer args as (scanner rows, bits) with
        each event's scanner row (-1 for events parsed in Python): they stay in scan order."""
        self._at = at
        self._len = length.astype(np.uint32) if length.shape[0] and length.max() < 2**32 \
            else length
        self._hot = hot
        self._scan_row = scan_row.astype(np.int32) if scan_row.shape[0] < 2**31 else scan_row

    # ---- EventDetails ---------------------------------------------------------------------------
    def stats(self, event: int) -> dict[str, Any]:
        self._check()
        raw = self._bytes(int(self._at[event]), int(self._len[event]))
        return json.loads(raw) if raw else {}

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        events = np.asarray(events, np.int64)
        out = np.full(events.shape[0], None, dtype=object)
        for buffer, offsets, picked in self._by_buffer(events, np.arange(events.shape[0])):
            v_at, v_len = self._find(buffer, offsets, events[picked], name)
            found = v_at >= 0
            if found.any():  # one json.loads for the column, not one per event
                text = gather_values(buffer, v_at[found], v_len[found])
                values = json.loads(text.decode("utf-8", self._errors))
                out[picked[found]] = np.fromiter(values, object, len(values))
            for k in picked[v_at == -2].tolist():
                out[k] = self.stats(int(events[k])).get(name)
        return out

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        events = np.asarray(events, np.int64)
        present = np.zeros(events.shape[0], bool)
        values = np.zeros(events.shape[0], np.uint64)
        side = self._at[events] < 0
        hot = self._hot.get(name)
        if hot is not None:  # the scanned rows from their column, the parsed ones below
            rows, bits = hot
            mine = np.flatnonzero(~side)
            wanted = self._scan_row[events[mine]]
            at = np.searchsorted(rows, wanted)
            hit = at < rows.shape[0]
            hit[hit] = rows[at[hit]] == wanted[hit]
            present[mine[hit]] = True
            values[mine[hit]] = bits[at[hit]]
            events_left = np.flatnonzero(side)
        else:
            events_left = np.arange(events.shape[0])
        for buffer, offsets, picked in self._by_buffer(events, events_left):
            v_at, v_len = self._find(buffer, offsets, events[picked], name)
            has = np.zeros(picked.shape[0], np.uint8)
            bits = np.zeros(picked.shape[0], np.uint64)
            int_values(buffer, v_at, v_len, has, bits)
            present[picked] = has.astype(bool)
            values[picked] = bits
            for k in picked[v_at == -2].tolist():
                value = self.stats(int(events[k])).get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    present[k], values[k] = True, value & _MASK
        return present, values

    # ---- reading ranges -------------------------------------------------------------------------
    def _check(self) -> None:
        """Refuses to read a mapped file that changed on disk (a read could kill the kernel)."""
        if isinstance(self._main, MappedFile):
            ensure_intact(self._main)

    def _raw(self, at: int, length: int) -> bytes:
        if at < 0:
            return self._side[-1 - at:-1 - at + length]
        return bytes(self._main[at:at + length])

    def _bytes(self, at: int, length: int) -> str:
        return self._raw(at, length).decode("utf-8", self._errors) if length else ""

    def _by_buffer(self, events: np.ndarray, picked: np.ndarray):
        """(buffer, offsets, positions in `events`) for the main and the side buffer."""
        at = self._at[events[picked]]
        main = picked[at >= 0]
        if main.shape[0]:
            self._check()
            yield self._main, self._at[events[main]], main
        side = picked[at < 0]
        if side.shape[0]:
            yield self._side, -1 - self._at[events[side]], side

    def _find(self, buffer: Any, offsets: np.ndarray, events: np.ndarray,
              name: str) -> tuple[np.ndarray, np.ndarray]:
        """Where each event's `name` value lies in buffer: (at, length); at -1 where absent,
        -2 where its keys are escaped and only json.loads can tell."""
        v_at = np.empty(events.shape[0], np.int64)
        v_len = np.empty(events.shape[0], np.int64)
        find_values(buffer, offsets, self._len[events].astype(np.int64), name.encode(), v_at,
                    v_len)
        return v_at, v_len
