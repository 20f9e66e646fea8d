# Protobuf wire primitives shared by the scanners (wire.pyx, hlo_scan.pyx), inlined into each.
#
# Every reader takes the bytes as a pointer plus the end of the message being read, returns the
# next position or -1 on malformed input (a varint longer than 10 bytes, a field running past
# `end`, a negative position), and never reads at or past `end`: callers keep `end` within the
# buffer, so the scanners need no per-byte bounds checks of their own.

from libc.stdint cimport int64_t, uint8_t, uint64_t


cdef inline int64_t read_varint(const uint8_t* buf, int64_t pos, int64_t end,
                                uint64_t* value) noexcept nogil:
    """Reads the varint at pos into value[0]; the next pos, or -1 (value 0) if malformed."""
    cdef uint64_t result = 0
    cdef unsigned int shift = 0
    cdef uint8_t b
    value[0] = 0
    if pos < 0:
        return -1
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            value[0] = result
            return pos
        shift += 7
        if shift >= 70:
            return -1
    return -1


cdef inline int64_t len_field(const uint8_t* buf, int64_t pos, int64_t end,
                              int64_t* payload_end) noexcept nogil:
    """Reads a length prefix at pos: the payload's start (its end in payload_end[0]), or -1."""
    cdef uint64_t length
    pos = read_varint(buf, pos, end, &length)
    if pos < 0 or length > <uint64_t>(end - pos):
        payload_end[0] = -1
        return -1
    payload_end[0] = pos + <int64_t>length
    return pos


cdef inline int64_t skip_field(const uint8_t* buf, int64_t pos, int64_t end,
                               int64_t wire_type) noexcept nogil:
    """Skips one value of wire_type at pos; the next pos, or -1 (unknown type, past end)."""
    cdef uint64_t ignored
    cdef int64_t payload_end
    if pos < 0:
        return -1
    if wire_type == 0:
        return read_varint(buf, pos, end, &ignored)
    if wire_type == 1:
        return pos + 8 if pos + 8 <= end else -1
    if wire_type == 5:
        return pos + 4 if pos + 4 <= end else -1
    if wire_type == 2:
        pos = len_field(buf, pos, end, &payload_end)
        return payload_end if pos >= 0 else -1
    return -1


cdef inline int64_t read_tag(const uint8_t* buf, int64_t pos, int64_t end, int64_t* field,
                             int64_t* wire_type) noexcept nogil:
    """Reads a field's tag at pos into its number and wire type; the next pos, or -1 (both 0)."""
    cdef uint64_t tag
    pos = read_varint(buf, pos, end, &tag)
    field[0] = <int64_t>(tag >> 3)
    wire_type[0] = <int64_t>(tag & 7)
    return pos


cdef inline int64_t next_field(const uint8_t* buf, int64_t pos, int64_t end, int64_t* field,
                               int64_t* wire_type, int64_t* value) noexcept nogil:
    """Reads the whole field at pos (tag and value); the pos after it, or -1 if malformed.

    value[0] is a varint's value (wire type 0, as int64) or a length-delimited payload's start
    (wire type 2: the payload ends at the returned pos), else 0. On -1, a malformed varint (the
    tag's or the value's) reads as wire type 0 with value 0, and a malformed length leaves
    value[0] -1: a caller that stores a varint field before it checks the pos stores 0, and
    one that reads a payload checks the pos first.
    """
    cdef uint64_t raw
    cdef int64_t payload_end
    pos = read_tag(buf, pos, end, field, wire_type)
    if wire_type[0] == 0:
        pos = read_varint(buf, pos, end, &raw)
        value[0] = <int64_t>raw
        return pos
    if wire_type[0] == 2:
        value[0] = len_field(buf, pos, end, &payload_end)
        return payload_end
    value[0] = 0
    return skip_field(buf, pos, end, wire_type[0])
