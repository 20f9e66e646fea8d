"""Protobuf wire encoding of whole columns at once, for messages too many to build one by one.

A `Part` is one encoded field for every row, as segments: (rows, width) uint8 arrays with a mask
of the bytes that count and the count per row. Parts side by side are their concatenation, row
by row, and `to_bytes` reads the bytes row after row. Nothing loops over rows in Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Segment = tuple[np.ndarray, np.ndarray, np.ndarray]  # data (n, w) uint8, mask (n, w), lengths (n,)
Part = list[Segment]

_VARINT, _FIXED64, _LEN = 0, 1, 2
# Smallest value that needs k+1 bytes, k = 1..9.
_THRESHOLDS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


def as_u64(values) -> np.ndarray:
    """Two's complement view of int64 values, as proto writes negative varints."""
    arr = np.asarray(values)
    if arr.dtype == np.uint64:
        return arr
    return arr.astype(np.int64).view(np.uint64)


def varint_lengths(values) -> np.ndarray:
    return np.searchsorted(_THRESHOLDS, as_u64(values), side="right") + 1


def encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(field: int, wire_type: int) -> bytes:
    return encode_varint(field << 3 | wire_type)


# For a varint of n <= 8 bytes: 0x80 in each of its bytes but the last, as a little-endian uint64.
_CONTINUATION = np.array(
    [sum(0x80 << (8 * k) for k in range(n - 1)) for n in range(9)], dtype=np.uint64
)


def _varint(values) -> Segment:
    v = as_u64(values)
    lengths = varint_lengths(v)
    width = int(lengths.max()) if len(v) else 1
    if width <= 8:  # spread the 7-bit groups into the bytes of one little-endian uint64
        spread = v & np.uint64(0x7F)
        for k in range(1, width):
            spread |= ((v >> np.uint64(7 * k)) & np.uint64(0x7F)) << np.uint64(8 * k)
        spread |= _CONTINUATION[lengths]
        data = spread.astype("<u8").view(np.uint8).reshape(len(v), 8)[:, :width]
    else:
        data = np.empty((len(v), width), dtype=np.uint8)
        for k in range(width):
            data[:, k] = ((v >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
            data[:, k] |= (lengths > k + 1).view(np.uint8) << 7
    mask = np.arange(width)[None, :] < lengths[:, None]
    return data, mask, lengths


def _constant(rows: int, payload: bytes) -> Segment:
    data = np.broadcast_to(np.frombuffer(payload, dtype=np.uint8), (rows, len(payload)))
    return (
        data,
        np.ones((rows, len(payload)), dtype=bool),
        np.full(rows, len(payload), dtype=np.int64),
    )


def _only(part: Part, present) -> Part:
    if present is None:
        return part
    present = np.asarray(present, dtype=bool)
    return [(d, m & present[:, None], np.where(present, n, 0)) for d, m, n in part]


def varint_field(field: int, values, present=None, implicit: bool = False) -> Part:
    """A varint field; `implicit` leaves out zeros as proto3 does outside a oneof."""
    values = np.asarray(values)
    if implicit:
        nonzero = as_u64(values) != 0
        present = nonzero if present is None else (np.asarray(present, dtype=bool) & nonzero)
    return _only([_constant(len(values), key(field, _VARINT)), _varint(values)], present)


def double_field(field: int, values, present=None) -> Part:
    values = np.ascontiguousarray(values, dtype="<f8")
    body = values.view(np.uint8).reshape(len(values), 8)
    return _only(
        [
            _constant(len(values), key(field, _FIXED64)),
            (body, np.ones(body.shape, dtype=bool), np.full(len(values), 8)),
        ],
        present,
    )


def table_field(field: int, codes, table: Sequence[bytes], present=None) -> Part:
    """A length-delimited field whose payload is `table[code]` for each row."""
    codes = np.asarray(codes, dtype=np.int64)
    encoded = [key(field, _LEN) + encode_varint(len(b)) + b for b in table]
    width = max(len(e) for e in encoded)
    rows = np.zeros((len(encoded), width), dtype=np.uint8)
    lengths = np.array([len(e) for e in encoded])
    for i, e in enumerate(encoded):
        rows[i, : len(e)] = np.frombuffer(e, dtype=np.uint8)
    mask = np.arange(width)[None, :] < lengths[codes][:, None]
    return _only([(rows[codes], mask, lengths[codes])], present)


def message_field(field: int, parts: Sequence[Part], present=None) -> Part:
    body = _only([seg for part in parts for seg in part], present)
    size = sum(seg[2] for seg in body)
    return _only([_constant(len(size), key(field, _LEN)), _varint(size)], present) + body


def to_bytes(part: Part) -> bytes:
    data = np.concatenate([seg[0] for seg in part], axis=1)
    mask = np.concatenate([seg[1] for seg in part], axis=1)
    return data[mask].tobytes()


def len_delimited(field: int, payload: bytes) -> bytes:
    return key(field, _LEN) + encode_varint(len(payload)) + payload


def varint_scalar(field: int, value: int) -> bytes:
    return key(field, _VARINT) + encode_varint(value)
