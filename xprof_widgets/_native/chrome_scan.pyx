# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""A Chrome trace JSON scanner that writes columns: no Python object per event.

The scanner walks the document's bytes once, validating them as JSON (the same grammar Python's
`json` accepts, NaN and Infinity included), and sorts each event into one of three kinds:

- a slice (`ph` X, i, I or n) whose fields have the common shapes: written to columns (track,
  name row, exact start in whole microseconds plus picoseconds, duration in picoseconds, the
  byte range of its `args`, a few integer args pulled out by key);
- a flow point (`ph` s, t or f with an integer or string `id`): written to flow columns;
- anything else (metadata, B/E pairs, counters, odd field types, numbers with exponents): its
  bytes are copied aside for the Python decoder, which reads them one at a time (they are few).

Strings are interned by their raw bytes (escapes and all); Python decodes each distinct one
once. Input may arrive in pieces (a gzip stream): `feed` consumes whole events and says where
it stopped, so the caller keeps the unread tail for the next piece.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

cdef enum:  # feed()'s statuses
    C_NEED_MORE = 0  # consumed what it could; call again with the rest and more bytes
    C_DONE = 1  # the document is complete
    C_ERROR = 2  # not JSON, or not shaped as a trace this scanner reads (see `error`)
    C_FALLBACK = 3  # valid JSON of a shape left to the Python decoder (see `error`)

NEED_MORE, DONE, ERROR, FALLBACK = C_NEED_MORE, C_DONE, C_ERROR, C_FALLBACK

cdef enum:
    S_START = 0
    S_TOP_KEY_OR_END = 1
    S_TOP_KEY = 2
    S_TOP_COMMA_OR_END = 3
    S_EV_VALUE_OR_END = 4
    S_EV_VALUE = 5
    S_EV_COMMA_OR_END = 6
    S_DONE = 7

cdef enum:
    R_MORE = -1  # the bytes end before the value does
    R_BAD = -2  # not JSON
    R_DEEP = -3  # nested deeper than MAX_DEPTH

cdef enum:
    T_MISSING = 0
    T_STRING = 1
    T_INT = 2  # an integer that fits int64
    T_NUMBER = 3  # any other number (fraction, exponent, huge, NaN, Infinity)
    T_NULL = 4
    T_OBJECT = 5
    T_OTHER = 6  # arrays, booleans

cdef enum:
    MAX_DEPTH = 400
    MAX_HOT = 32

cdef struct Vec:
    uint8_t* data
    int64_t size
    int64_t cap


cdef int vec_reserve(Vec* v, int64_t extra) noexcept nogil:
    cdef int64_t need = v.size + extra
    cdef int64_t cap
    cdef uint8_t* grown
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 4096
    while cap < need:
        cap *= 2
    grown = <uint8_t*>realloc(v.data, cap)
    if grown == NULL:
        return -1
    v.data = grown
    v.cap = cap
    return 0


cdef inline int vec_put(Vec* v, const void* src, int64_t n) noexcept nogil:
    if v.size + n > v.cap and vec_reserve(v, n) < 0:
        return -1
    memcpy(v.data + v.size, src, n)
    v.size += n
    return 0


cdef inline int put_i64(Vec* v, int64_t x) noexcept nogil:
    return vec_put(v, &x, 8)


cdef inline int put_i32(Vec* v, int32_t x) noexcept nogil:
    return vec_put(v, &x, 4)


cdef inline int put_u8(Vec* v, uint8_t x) noexcept nogil:
    return vec_put(v, &x, 1)


cdef void vec_free(Vec* v) noexcept nogil:
    free(v.data)
    v.data = NULL
    v.size = v.cap = 0


cdef class _Owned:
    """A malloc'd block handed to numpy without a copy (np.frombuffer keeps it alive)."""

    cdef uint8_t* data
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        free(self.data)

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.size
        self.strides[0] = 1
        view.buf = self.data if self.data != NULL else <void*>b""
        view.obj = self
        view.len = self.size
        view.readonly = 0
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef object vec_array(Vec* v, object dtype):
    """The vector's bytes as a numpy array of dtype, without a copy; the vector is emptied."""
    cdef _Owned owned = _Owned()
    cdef uint8_t* shrunk
    if v.size and v.size < v.cap:
        shrunk = <uint8_t*>realloc(v.data, v.size)
        if shrunk != NULL:
            v.data = shrunk
    owned.data = v.data
    owned.size = v.size
    v.data = NULL
    v.size = v.cap = 0
    return np.frombuffer(owned, dtype)


cdef struct Interner:
    Vec arena  # the keys' bytes, back to back
    Vec offsets  # int64 start of key k; key k ends where k + 1 starts
    int32_t* table  # open addressing: key id + 1, 0 = empty
    int64_t mask
    int32_t count


cdef inline uint64_t hash_bytes(const uint8_t* p, int64_t n) noexcept nogil:
    """A multiply-xorshift hash, eight bytes a step (names run long: Python functions)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef uint64_t w
    cdef int64_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 32
        i += 8
    w = 0
    memcpy(&w, p + i, n - i)
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL
    return h ^ (h >> 29)


cdef int interner_init(Interner* t) noexcept nogil:
    memset(t, 0, sizeof(Interner))
    t.mask = 1023
    t.table = <int32_t*>malloc((t.mask + 1) * sizeof(int32_t))
    if t.table == NULL:
        return -1
    memset(t.table, 0, (t.mask + 1) * sizeof(int32_t))
    return put_i64(&t.offsets, 0)


cdef void interner_free(Interner* t) noexcept nogil:
    vec_free(&t.arena)
    vec_free(&t.offsets)
    free(t.table)
    t.table = NULL


cdef inline int64_t key_start(Interner* t, int32_t k) noexcept nogil:
    return (<int64_t*>t.offsets.data)[k]


cdef int interner_grow(Interner* t) noexcept nogil:
    cdef int64_t mask = t.mask * 2 + 1
    cdef int32_t* table = <int32_t*>malloc((mask + 1) * sizeof(int32_t))
    cdef int32_t k
    cdef int64_t slot, start
    if table == NULL:
        return -1
    memset(table, 0, (mask + 1) * sizeof(int32_t))
    for k in range(t.count):
        start = key_start(t, k)
        slot = hash_bytes(t.arena.data + start, key_start(t, k + 1) - start) & mask
        while table[slot]:
            slot = (slot + 1) & mask
        table[slot] = k + 1
    free(t.table)
    t.table = table
    t.mask = mask
    return 0


cdef int32_t intern(Interner* t, const uint8_t* p, int64_t n) noexcept nogil:
    """The id of the key p[:n], added when new; -1 when memory runs out."""
    cdef int64_t slot = hash_bytes(p, n) & t.mask
    cdef int32_t k
    cdef int64_t start
    while True:
        k = t.table[slot]
        if k == 0:
            break
        start = key_start(t, k - 1)
        if key_start(t, k) - start == n and memcmp(t.arena.data + start, p, n) == 0:
            return k - 1
        slot = (slot + 1) & t.mask
    if vec_put(&t.arena, p, n) < 0 or put_i64(&t.offsets, t.arena.size) < 0:
        return -1
    t.table[slot] = t.count + 1
    t.count += 1
    if t.count * 2 > t.mask and interner_grow(t) < 0:
        return -1
    return t.count - 1


cdef int32_t lookup(Interner* t, const uint8_t* p, int64_t n) noexcept nogil:
    """The id of the key p[:n], or -1."""
    cdef int64_t slot = hash_bytes(p, n) & t.mask
    cdef int32_t k
    cdef int64_t start
    while True:
        k = t.table[slot]
        if k == 0:
            return -1
        start = key_start(t, k - 1)
        if key_start(t, k) - start == n and memcmp(t.arena.data + start, p, n) == 0:
            return k - 1
        slot = (slot + 1) & t.mask


cdef list interner_keys(Interner* t):
    cdef list out = []
    cdef int32_t k
    cdef int64_t start
    for k in range(t.count):
        start = key_start(t, k)
        out.append(t.arena.data[start:key_start(t, k + 1)])
    return out


# ---- JSON tokens ---------------------------------------------------------------------------------
cdef uint8_t PLAIN[256]
"""1 for the bytes a string holds as they are: printable ASCII but for the quote and the
backslash (one table lookup per byte in the strings' inner loop)."""
cdef uint8_t SPACE[256]
"""1 for JSON's whitespace."""
for _c in range(256):
    PLAIN[_c] = 32 <= _c < 128 and _c != 34 and _c != 92
    SPACE[_c] = _c in (32, 10, 13, 9)


cdef inline int64_t skip_ws(const uint8_t* b, int64_t p, int64_t end) noexcept nogil:
    while p < end and SPACE[b[p]]:
        p += 1
    return p


cdef inline bint is_hex(uint8_t c) noexcept nogil:
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


cdef int64_t utf8_sequence(const uint8_t* b, int64_t p, int64_t end) noexcept nogil:
    """The length of the UTF-8 sequence at p (lead byte >= 0x80), surrogates allowed as
    json.loads's 'surrogatepass' does; R_BAD when invalid, R_MORE when cut by the buffer."""
    cdef uint8_t c = b[p]
    cdef int64_t n, i
    cdef uint8_t lo = 0x80, hi = 0xBF
    if 0xC2 <= c <= 0xDF:
        n = 2
    elif 0xE0 <= c <= 0xEF:
        n = 3
        if c == 0xE0:
            lo = 0xA0
    elif 0xF0 <= c <= 0xF4:
        n = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return R_BAD
    for i in range(1, n):
        if p + i >= end:
            return R_MORE
        if not ((lo if i == 1 else 0x80) <= b[p + i] <= (hi if i == 1 else 0xBF)):
            return R_BAD
    return n


cdef class Scanner:
    """One document's scan; `feed` it the bytes in order, then read the columns."""

    cdef int state
    cdef readonly bint array_doc  # the document is a list of events, not an object
    cdef readonly bint seen_events  # a list of events was found
    cdef bint copy_args
    cdef public int64_t n_events  # array elements seen, `{}` and non-objects included
    cdef public int64_t error_at  # absolute offset of the error (ERROR / FALLBACK)
    cdef public str error
    cdef public int64_t bad_utf8_at  # first byte that is not UTF-8 inside a string, or -1
    cdef int64_t base  # absolute offset of the current buffer's byte 0
    # interned keys
    cdef Interner tracks, names, flow_keys
    cdef Vec key
    # slices
    cdef Vec s_event, s_track, s_name, s_ts_us, s_ts_ps, s_dur, s_args_at, s_args_len
    # integer args pulled out, per key: rows and values (uint64 bits)
    cdef Vec h_rows[MAX_HOT]
    cdef Vec h_values[MAX_HOT]
    cdef int n_hot
    cdef uint8_t* hot_keys[MAX_HOT]
    cdef int64_t hot_len[MAX_HOT]
    cdef object hot_bytes
    cdef bint hot_seen[MAX_HOT]
    cdef uint64_t hot_val[MAX_HOT]
    # flow points
    cdef Vec f_event, f_track, f_key, f_ts_us, f_ts_ps, f_encloses
    # events for the Python decoder: index, offset into `slow`, length
    cdef Vec o_event, o_at, o_len, slow
    cdef Vec args  # args bytes, when copied
    cdef public list header  # [(raw key bytes, raw value bytes)] of the top-level object

    def __cinit__(self, hot_keys=(), bint copy_args=True, int64_t expect_events=0):
        self.state = S_START
        self.copy_args = copy_args
        self.error = ""
        self.error_at = -1
        self.bad_utf8_at = -1
        self.header = []
        if interner_init(&self.tracks) < 0 or interner_init(&self.names) < 0 \
                or interner_init(&self.flow_keys) < 0:
            raise MemoryError()
        self.hot_bytes = [bytes(k) for k in hot_keys]
        if len(self.hot_bytes) > MAX_HOT:
            raise ValueError(f"at most {MAX_HOT} keys can be pulled out")
        self.n_hot = len(self.hot_bytes)
        if expect_events > 0 and self._reserve(expect_events) < 0:
            raise MemoryError()
        for i, k in enumerate(self.hot_bytes):
            self.hot_keys[i] = <uint8_t*><char*>k
            self.hot_len[i] = len(k)

    def __dealloc__(self):
        interner_free(&self.tracks)
        interner_free(&self.names)
        interner_free(&self.flow_keys)
        vec_free(&self.key)
        vec_free(&self.s_event)
        vec_free(&self.s_track)
        vec_free(&self.s_name)
        vec_free(&self.s_ts_us)
        vec_free(&self.s_ts_ps)
        vec_free(&self.s_dur)
        vec_free(&self.s_args_at)
        vec_free(&self.s_args_len)
        for i in range(MAX_HOT):
            vec_free(&self.h_rows[i])
            vec_free(&self.h_values[i])
        vec_free(&self.f_event)
        vec_free(&self.f_track)
        vec_free(&self.f_key)
        vec_free(&self.f_ts_us)
        vec_free(&self.f_ts_ps)
        vec_free(&self.f_encloses)
        vec_free(&self.o_event)
        vec_free(&self.o_at)
        vec_free(&self.o_len)
        vec_free(&self.slow)
        vec_free(&self.args)

    cdef int _reserve(self, int64_t n) noexcept nogil:
        """Room for n slices up front: no copying as the columns grow (room that is never
        touched costs addresses, not memory)."""
        if vec_reserve(&self.s_event, 8 * n) < 0 or vec_reserve(&self.s_track, 4 * n) < 0 \
                or vec_reserve(&self.s_name, 4 * n) < 0 or vec_reserve(&self.s_ts_us, 8 * n) < 0 \
                or vec_reserve(&self.s_ts_ps, 4 * n) < 0 or vec_reserve(&self.s_dur, 8 * n) < 0 \
                or vec_reserve(&self.s_args_at, 8 * n) < 0 \
                or vec_reserve(&self.s_args_len, 8 * n) < 0:
            return -1
        return 0

    def feed(self, const uint8_t[::1] buf, int64_t base, bint final):
        """Scans buf (the document's bytes from absolute offset `base`): (status, consumed),
        consumed being how many of buf's bytes were read whole. On NEED_MORE, call again with
        buf[consumed:] followed by the next bytes (final=True when none follow)."""
        cdef int64_t consumed = 0
        cdef int status
        cdef const uint8_t* b = &buf[0] if buf.shape[0] else <const uint8_t*>b""
        self.base = base
        with nogil:
            status = self._scan(b, buf.shape[0], final, &consumed)
        if status == -10:
            raise MemoryError("out of memory while scanning a Chrome trace")
        if status == -11:  # a header value: kept as bytes for Python
            return self._feed_header(buf, base, final, consumed)
        return status, consumed

    def _feed_header(self, const uint8_t[::1] buf, int64_t base, bint final, int64_t at):
        """Reads one top-level `"key": value` at `at` into `header`, then goes on scanning."""
        cdef const uint8_t* b = &buf[0]
        cdef int64_t end = buf.shape[0]
        cdef int64_t p, key_end, v
        cdef bint esc
        p = self._string(b, at, end, &esc)
        if p < 0:
            return self._token_failure(p, at, final, at)
        key_end = p
        p = skip_ws(b, p, end)
        if p >= end:
            return self._token_failure(R_MORE, p, final, at)
        if b[p] != 58:  # ':'
            return self._fail(ERROR, p, "expected ':' after a key"), at
        p = skip_ws(b, p + 1, end)
        v = self._skip_value(b, p, end, 0)
        if v < 0:
            return self._token_failure(v, p, final, at)
        self.header.append((bytes(buf[at:key_end]), bytes(buf[p:v])))
        self.state = S_TOP_COMMA_OR_END
        status, more = self.feed(buf[v:], base + v, final)
        return status, v + more

    def _token_failure(self, int64_t code, int64_t p, bint final, int64_t consumed):
        if code == R_MORE and not final:
            return NEED_MORE, consumed
        if code == R_MORE:
            return self._fail(ERROR, p, "the document ends inside a value"), consumed
        if code == R_DEEP:
            return self._fail(FALLBACK, p, "values nested too deeply"), consumed
        return self._fail(ERROR, p, "not valid JSON"), consumed

    def _fail(self, int status, int64_t p, str why):
        self.error_at = self.base + p
        self.error = why
        return status

    cdef int _scan(self, const uint8_t* b, int64_t end, bint final,
                   int64_t* consumed) noexcept nogil:
        """The state machine over whole units (a header member, an event, a comma); returns a
        status, -10 when out of memory, -11 at a header member for Python to read."""
        cdef int64_t p = 0, q
        cdef int r
        cdef uint8_t c
        while True:
            consumed[0] = p
            p = skip_ws(b, p, end)
            if p >= end:
                if self.state == S_DONE:
                    consumed[0] = end
                    return C_DONE
                if final:
                    return self._cfail(C_ERROR, p, 1)
                return C_NEED_MORE
            c = b[p]
            if self.state == S_START:
                if p == 0 and self.base == 0 and end >= 3 and b[0] == 0xEF and b[1] == 0xBB \
                        and b[2] == 0xBF:
                    return self._cfail(C_FALLBACK, 0, 2)
                if c == 123:  # {
                    self.state = S_TOP_KEY_OR_END
                elif c == 91:  # [
                    self.array_doc = True
                    self.seen_events = True
                    self.state = S_EV_VALUE_OR_END
                else:
                    return self._cfail(C_FALLBACK, p, 3)
                p += 1
            elif self.state == S_TOP_KEY_OR_END or self.state == S_TOP_KEY:
                if c == 125 and self.state == S_TOP_KEY_OR_END:  # }
                    self.state = S_DONE
                    p += 1
                    continue
                if c != 34:
                    return self._cfail(C_ERROR, p, 4)
                if end - p >= 13 and memcmp(b + p, b'"traceEvents"', 13) == 0:
                    q = skip_ws(b, p + 13, end)
                    if q >= end:
                        return self._more(final, p)
                    if b[q] != 58:
                        return self._cfail(C_ERROR, q, 5)
                    q = skip_ws(b, q + 1, end)
                    if q >= end:
                        return self._more(final, p)
                    if b[q] != 91 or self.seen_events:  # not a list, or a second one
                        return self._cfail(C_FALLBACK, q, 6)
                    self.seen_events = True
                    self.state = S_EV_VALUE_OR_END
                    p = q + 1
                else:
                    consumed[0] = p
                    return -11
            elif self.state == S_TOP_COMMA_OR_END:
                if c == 44:
                    self.state = S_TOP_KEY
                elif c == 125:
                    self.state = S_DONE
                else:
                    return self._cfail(C_ERROR, p, 7)
                p += 1
            elif self.state == S_EV_COMMA_OR_END:
                if c == 44:
                    self.state = S_EV_VALUE
                elif c == 93:
                    self.state = S_DONE if self.array_doc else S_TOP_COMMA_OR_END
                else:
                    return self._cfail(C_ERROR, p, 8)
                p += 1
            elif self.state == S_EV_VALUE_OR_END or self.state == S_EV_VALUE:
                if c == 93 and self.state == S_EV_VALUE_OR_END:
                    self.state = S_DONE if self.array_doc else S_TOP_COMMA_OR_END
                    p += 1
                    continue
                q = self._event(b, p, end)
                if q == -10:
                    return -10
                if q == R_MORE:
                    return self._more(final, p)
                if q == R_DEEP:
                    return self._cfail(C_FALLBACK, p, 9)
                if q < 0:
                    return self._cfail(C_ERROR, p, 10)
                self.n_events += 1
                self.state = S_EV_COMMA_OR_END
                p = q
            else:  # S_DONE: only whitespace may follow
                return self._cfail(C_ERROR, p, 11)

    cdef inline int _more(self, bint final, int64_t p) noexcept nogil:
        if final:
            return self._cfail(C_ERROR, p, 1)
        return C_NEED_MORE

    cdef int _cfail(self, int status, int64_t p, int why) noexcept nogil:
        self.error_at = self.base + p
        with gil:
            self.error = {1: "the document ends early", 2: "a byte-order mark",
                          3: "not a JSON object or list", 4: "expected a key",
                          5: "expected ':' after a key", 6: "traceEvents that is not one list",
                          7: "expected ',' or '}'", 8: "expected ',' or ']'",
                          9: "values nested too deeply", 10: "not valid JSON",
                          11: "extra data after the document"}[why]
        return status

    # ---- values ----------------------------------------------------------------------------------
    cdef int64_t _string(self, const uint8_t* b, int64_t p, int64_t end, bint* esc) noexcept nogil:
        """The position after the string at p (b[p] == '"'); esc set when it has escapes."""
        cdef uint8_t c
        cdef int64_t n, k
        esc[0] = False
        p += 1
        while True:
            while p < end and PLAIN[b[p]]:
                p += 1
            if p >= end:
                return R_MORE
            c = b[p]
            if c == 34:
                return p + 1
            if c == 92:
                esc[0] = True
                if p + 1 >= end:
                    return R_MORE
                c = b[p + 1]
                if c == 117:  # \uXXXX
                    if p + 6 > end:
                        return R_MORE
                    for k in range(2, 6):
                        if not is_hex(b[p + k]):
                            return R_BAD
                    p += 6
                elif c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 \
                        or c == 114 or c == 116:
                    p += 2
                else:
                    return R_BAD
            elif c < 32:
                return R_BAD
            elif c < 128:
                p += 1
            else:
                n = utf8_sequence(b, p, end)
                if n == R_MORE:
                    return R_MORE
                if n == R_BAD:
                    if self.bad_utf8_at < 0:
                        self.bad_utf8_at = self.base + p
                    p += 1
                else:
                    p += n

    cdef int64_t _number(self, const uint8_t* b, int64_t p, int64_t end, int* kind,
                         int64_t* ival) noexcept nogil:
        """The position after the number at p; kind T_INT (value in ival) or T_NUMBER."""
        cdef bint neg = False, frac = False
        cdef uint64_t acc = 0
        cdef int digits = 0
        if b[p] == 45:  # -
            neg = True
            p += 1
            if p >= end:
                return R_MORE
            if b[p] == 73:  # -Infinity
                return self._word(b, p, end, b"Infinity", 8, kind)
        if not (48 <= b[p] <= 57):
            return R_BAD
        if b[p] == 48:
            p += 1
            digits = 1
        else:
            while p < end and 48 <= b[p] <= 57:
                if digits < 19:
                    acc = acc * 10 + (b[p] - 48)
                digits += 1
                p += 1
        if p < end and b[p] == 46:  # .
            frac = True
            p += 1
            if p >= end:
                return R_MORE
            if not (48 <= b[p] <= 57):
                return R_BAD
            while p < end and 48 <= b[p] <= 57:
                p += 1
        if p < end and (b[p] == 101 or b[p] == 69):  # e E
            frac = True
            p += 1
            if p < end and (b[p] == 43 or b[p] == 45):
                p += 1
            if p >= end:
                return R_MORE
            if not (48 <= b[p] <= 57):
                return R_BAD
            while p < end and 48 <= b[p] <= 57:
                p += 1
        if p >= end:
            return R_MORE  # the number may go on in the next bytes
        if frac or digits > 18:
            kind[0] = T_NUMBER
        else:
            kind[0] = T_INT
            ival[0] = -<int64_t>acc if neg else <int64_t>acc
        return p

    cdef int64_t _word(self, const uint8_t* b, int64_t p, int64_t end, const char* word,
                       int n, int* kind) noexcept nogil:
        if end - p < n:
            return R_MORE if memcmp(b + p, word, end - p) == 0 else R_BAD
        if memcmp(b + p, word, n) != 0:
            return R_BAD
        kind[0] = T_NUMBER if word[0] == 78 or word[0] == 73 else (
            T_NULL if word[0] == 110 else T_OTHER)
        return p + n

    cdef int64_t _value(self, const uint8_t* b, int64_t p, int64_t end, int depth, int* kind,
                        int64_t* ival) noexcept nogil:
        """The position after the value at p, its kind in kind[0]; R_MORE, R_BAD or R_DEEP."""
        cdef uint8_t c = b[p]
        cdef bint esc
        if c == 34:
            kind[0] = T_STRING
            return self._string(b, p, end, &esc)
        if c == 45 or (48 <= c <= 57):
            return self._number(b, p, end, kind, ival)
        if c == 123 or c == 91:
            kind[0] = T_OBJECT if c == 123 else T_OTHER
            return self._container(b, p, end, depth + 1)
        if c == 116:
            return self._word(b, p, end, b"true", 4, kind)
        if c == 102:
            return self._word(b, p, end, b"false", 5, kind)
        if c == 110:
            return self._word(b, p, end, b"null", 4, kind)
        if c == 78:
            return self._word(b, p, end, b"NaN", 3, kind)
        if c == 73:
            return self._word(b, p, end, b"Infinity", 8, kind)
        return R_BAD

    cdef int64_t _skip_value(self, const uint8_t* b, int64_t p, int64_t end,
                             int depth) noexcept nogil:
        cdef int kind
        cdef int64_t ival
        if p >= end:
            return R_MORE
        return self._value(b, p, end, depth, &kind, &ival)

    cdef int64_t _container(self, const uint8_t* b, int64_t p, int64_t end,
                            int depth) noexcept nogil:
        """Skips the object or array at p, checking it is JSON."""
        cdef bint is_object = b[p] == 123
        cdef uint8_t close = 125 if is_object else 93
        cdef bint esc
        if depth > MAX_DEPTH:
            return R_DEEP
        p = skip_ws(b, p + 1, end)
        if p >= end:
            return R_MORE
        if b[p] == close:
            return p + 1
        while True:
            if is_object:
                if b[p] != 34:
                    return R_BAD
                p = self._string(b, p, end, &esc)
                if p < 0:
                    return p
                p = skip_ws(b, p, end)
                if p >= end:
                    return R_MORE
                if b[p] != 58:
                    return R_BAD
                p = skip_ws(b, p + 1, end)
            p = self._skip_value(b, p, end, depth)
            if p < 0:
                return p
            p = skip_ws(b, p, end)
            if p >= end:
                return R_MORE
            if b[p] == close:
                return p + 1
            if b[p] != 44:
                return R_BAD
            p = skip_ws(b, p + 1, end)
            if p >= end:
                return R_MORE

    cdef int64_t _args(self, const uint8_t* b, int64_t p, int64_t end, bint* empty,
                       bint* escaped) noexcept nogil:
        """Skips the args object at p, noting the integer values of the keys pulled out, and
        whether a key is written with escapes (which only json.loads reads right)."""
        cdef int64_t key_at, key_end, v, ival
        cdef int kind, i
        cdef bint esc
        for i in range(self.n_hot):
            self.hot_seen[i] = False
        p = skip_ws(b, p + 1, end)
        if p >= end:
            return R_MORE
        empty[0] = b[p] == 125
        if empty[0]:
            return p + 1
        while True:
            if b[p] != 34:
                return R_BAD
            key_at = p + 1
            p = self._string(b, p, end, &esc)
            if p < 0:
                return p
            escaped[0] = escaped[0] or esc
            key_end = p - 1
            p = skip_ws(b, p, end)
            if p >= end:
                return R_MORE
            if b[p] != 58:
                return R_BAD
            p = skip_ws(b, p + 1, end)
            if p >= end:
                return R_MORE
            kind = T_MISSING
            v = self._value(b, p, end, 1, &kind, &ival)
            if v < 0:
                return v
            for i in range(self.n_hot):
                if key_end - key_at == self.hot_len[i] and \
                        memcmp(b + key_at, self.hot_keys[i], self.hot_len[i]) == 0:
                    # the last value of a repeated key wins, as in json.loads
                    self.hot_seen[i] = kind == T_INT or (kind == T_NUMBER and
                                                        _wide_int(b, p, v, &self.hot_val[i]))
                    if kind == T_INT:
                        self.hot_val[i] = <uint64_t>ival
                    break
            p = skip_ws(b, v, end)
            if p >= end:
                return R_MORE
            if b[p] == 125:
                return p + 1
            if b[p] != 44:
                return R_BAD
            p = skip_ws(b, p + 1, end)
            if p >= end:
                return R_MORE

    # ---- events ----------------------------------------------------------------------------------
    cdef int64_t _event(self, const uint8_t* b, int64_t p, int64_t end) noexcept nogil:
        """Scans the array element at p into the columns; the position after it, or an R_
        code, or -10 when out of memory."""
        cdef int64_t start = p, key_at, key_end, v, ival
        cdef int kind, key
        cdef bint esc, empty_args = False, key_esc
        # fields: kind, range, and the integer value where it is one
        cdef int k_ph = T_MISSING, k_name = T_MISSING, k_cat = T_MISSING, k_pid = T_MISSING
        cdef int k_tid = T_MISSING, k_ts = T_MISSING, k_dur = T_MISSING, k_args = T_MISSING
        cdef int k_id = T_MISSING, k_id2 = T_MISSING, k_bp = T_MISSING
        cdef int64_t a_ph = 0, e_ph = 0, a_name = 0, e_name = 0, a_cat = 0, e_cat = 0
        cdef int64_t a_pid = 0, e_pid = 0, a_tid = 0, e_tid = 0, a_ts = 0, e_ts = 0
        cdef int64_t a_dur = 0, e_dur = 0, a_args = 0, e_args = 0, a_id = 0, e_id = 0
        cdef int64_t a_bp = 0, e_bp = 0, i_pid = 0, i_tid = 0, i_id = 0
        cdef bint esc_ph = False, hot_pending = False, escaped = False
        cdef uint8_t ph
        cdef bint slice_, flow
        cdef int64_t ts_us, dur_us = 0
        cdef int32_t ts_ps, dur_ps = 0, track
        if b[p] != 123:
            v = self._skip_value(b, p, end, 0)
            if v < 0:
                return v
            return self._slow(b, start, v)
        p = skip_ws(b, p + 1, end)
        if p >= end:
            return R_MORE
        if b[p] == 125:  # {}: jax closes its event list with one
            return p + 1
        while True:
            if b[p] != 34:
                return R_BAD
            key_at = p + 1
            p = self._string(b, p, end, &key_esc)
            if p < 0:
                return p
            key_end = p - 1
            p = skip_ws(b, p, end)
            if p >= end:
                return R_MORE
            if b[p] != 58:
                return R_BAD
            p = skip_ws(b, p + 1, end)
            if p >= end:
                return R_MORE
            escaped = escaped or key_esc
            key = -1 if key_esc else _field(b + key_at, key_end - key_at)
            kind = T_MISSING
            if key == 7:  # args
                if b[p] == 123:
                    kind = T_OBJECT
                    v = self._args(b, p, end, &empty_args, &escaped)
                    hot_pending = True
                else:
                    v = self._value(b, p, end, 0, &kind, &ival)
                    hot_pending = False
            else:
                v = self._value(b, p, end, 0, &kind, &ival)
            if v < 0:
                return v
            if key == 0:
                k_ph, a_ph, e_ph = kind, p, v
                esc_ph = kind == T_STRING and _has_backslash(b, p, v)
            elif key == 1:
                k_name, a_name, e_name = kind, p, v
            elif key == 2:
                k_cat, a_cat, e_cat = kind, p, v
            elif key == 3:
                k_pid, a_pid, e_pid, i_pid = kind, p, v, ival
            elif key == 4:
                k_tid, a_tid, e_tid, i_tid = kind, p, v, ival
            elif key == 5:
                k_ts, a_ts, e_ts = kind, p, v
            elif key == 6:
                k_dur, a_dur, e_dur = kind, p, v
            elif key == 7:
                k_args, a_args, e_args = kind, p, v
            elif key == 8:
                k_id, a_id, e_id, i_id = kind, p, v, ival
            elif key == 9:
                k_id2 = kind
            elif key == 10:
                k_bp, a_bp, e_bp = kind, p, v
            p = skip_ws(b, v, end)
            if p >= end:
                return R_MORE
            if b[p] == 125:
                p += 1
                break
            if b[p] != 44:
                return R_BAD
            p = skip_ws(b, p + 1, end)
            if p >= end:
                return R_MORE
        # what the columns take; the rest goes to Python
        if k_ph != T_STRING or esc_ph or e_ph - a_ph != 3 or escaped:
            return self._slow(b, start, p)
        ph = b[a_ph + 1]
        slice_ = ph == 88 or ph == 105 or ph == 73 or ph == 110  # X i I n
        flow = ph == 115 or ph == 116 or ph == 102  # s t f
        if not (slice_ or flow) or not (k_ts == T_INT or k_ts == T_NUMBER):
            return self._slow(b, start, p)
        if not (_plain(k_pid) and _plain(k_tid)):
            return self._slow(b, start, p)
        if not (k_cat == T_STRING or k_cat == T_MISSING or k_cat == T_NULL):
            return self._slow(b, start, p)
        if not _decimal(b, a_ts, e_ts, &ts_us, &ts_ps):
            return self._slow(b, start, p)
        track = self._track(b, k_pid, a_pid, e_pid, i_pid, k_tid, a_tid, e_tid,
                                         i_tid)
        if track < 0:
            return -10
        if flow:
            if not (k_id == T_INT or k_id == T_STRING) or k_id2 != T_MISSING:
                return self._slow(b, start, p)
            if k_bp != T_MISSING and k_bp != T_STRING:
                return self._slow(b, start, p)
            # flows are keyed by their raw text: escaped spellings are Python's to read
            if _has_backslash(b, a_cat, e_cat) or _has_backslash(b, a_id, e_id) \
                    or _has_backslash(b, a_bp, e_bp):
                return self._slow(b, start, p)
            return p if self._flow_point(b, ph, track, k_cat, a_cat, e_cat, k_id, a_id, e_id,
                                         i_id, ts_us, ts_ps,
                                         k_bp == T_STRING and e_bp - a_bp == 3
                                         and b[a_bp + 1] == 101) == 0 else -10
        if not (k_name == T_STRING or k_name == T_MISSING or k_name == T_NULL):
            return self._slow(b, start, p)
        if not (k_args == T_OBJECT or k_args == T_MISSING or k_args == T_NULL):
            return self._slow(b, start, p)
        if ph == 88 and k_dur != T_MISSING and k_dur != T_NULL:
            if not (k_dur == T_INT or k_dur == T_NUMBER) or b[a_dur] == 45 \
                    or not _decimal(b, a_dur, e_dur, &dur_us, &dur_ps) \
                    or dur_us >= 9200000000000LL:
                return self._slow(b, start, p)
        return p if self._slice(b, p - start, track, k_name, a_name, e_name, k_cat, a_cat,
                                e_cat, ts_us, ts_ps, dur_us * 1000000 + dur_ps,
                                k_args == T_OBJECT and not empty_args, a_args, e_args,
                                hot_pending and k_args == T_OBJECT) == 0 else -10

    cdef int64_t _slow(self, const uint8_t* b, int64_t start, int64_t end) noexcept nogil:
        if put_i64(&self.o_event, self.n_events) < 0 or put_i64(&self.o_at, self.slow.size) < 0 \
                or put_i64(&self.o_len, end - start) < 0 \
                or vec_put(&self.slow, b + start, end - start) < 0:
            return -10
        return end

    cdef int32_t _track(self, const uint8_t* b, int k_pid, int64_t a_pid, int64_t e_pid,
                        int64_t i_pid, int k_tid, int64_t a_tid, int64_t e_tid,
                        int64_t i_tid) noexcept nogil:
        self.key.size = 0
        if _key_part(&self.key, b, k_pid, a_pid, e_pid, i_pid) < 0 or \
                _key_part(&self.key, b, k_tid, a_tid, e_tid, i_tid) < 0:
            return -1
        return intern(&self.tracks, self.key.data, self.key.size)

    cdef int _slice(self, const uint8_t* b, int64_t length, int32_t track, int k_name,
                    int64_t a_name, int64_t e_name, int k_cat, int64_t a_cat, int64_t e_cat,
                    int64_t ts_us, int32_t ts_ps, int64_t dur, bint has_args, int64_t a_args,
                    int64_t e_args, bint hot) noexcept nogil:
        cdef int64_t row = self.s_event.size // 8
        cdef int32_t name
        cdef int i
        self.key.size = 0
        if _text_part(&self.key, b, k_cat, a_cat, e_cat) < 0 or \
                _text_part(&self.key, b, k_name, a_name, e_name) < 0:
            return -1
        name = intern(&self.names, self.key.data, self.key.size)
        if name < 0:
            return -1
        if put_i64(&self.s_event, self.n_events) < 0 or put_i32(&self.s_track, track) < 0 \
                or put_i32(&self.s_name, name) < 0 or put_i64(&self.s_ts_us, ts_us) < 0 \
                or put_i32(&self.s_ts_ps, ts_ps) < 0 or put_i64(&self.s_dur, dur) < 0:
            return -1
        if not has_args:
            if put_i64(&self.s_args_at, 0) < 0 or put_i64(&self.s_args_len, 0) < 0:
                return -1
        elif self.copy_args:
            if put_i64(&self.s_args_at, self.args.size) < 0 \
                    or put_i64(&self.s_args_len, e_args - a_args) < 0 \
                    or vec_put(&self.args, b + a_args, e_args - a_args) < 0:
                return -1
        elif put_i64(&self.s_args_at, self.base + a_args) < 0 \
                or put_i64(&self.s_args_len, e_args - a_args) < 0:
            return -1
        if hot:
            for i in range(self.n_hot):
                if self.hot_seen[i]:
                    if put_i64(&self.h_rows[i], row) < 0 \
                            or vec_put(&self.h_values[i], &self.hot_val[i], 8) < 0:
                        return -1
        return 0

    cdef int _flow_point(self, const uint8_t* b, uint8_t ph, int32_t track, int k_cat,
                         int64_t a_cat, int64_t e_cat, int k_id, int64_t a_id, int64_t e_id,
                         int64_t i_id, int64_t ts_us, int32_t ts_ps, bint bp_e) noexcept nogil:
        cdef int32_t key
        self.key.size = 0
        if _text_part(&self.key, b, k_cat, a_cat, e_cat) < 0 or \
                _key_part(&self.key, b, k_id, a_id, e_id, i_id) < 0:
            return -1
        key = intern(&self.flow_keys, self.key.data, self.key.size)
        if key < 0:
            return -1
        if put_i64(&self.f_event, self.n_events) < 0 or put_i32(&self.f_track, track) < 0 \
                or put_i32(&self.f_key, key) < 0 or put_i64(&self.f_ts_us, ts_us) < 0 \
                or put_i32(&self.f_ts_ps, ts_ps) < 0 \
                or put_u8(&self.f_encloses, ph != 102 or bp_e) < 0:
            return -1
        return 0

    # ---- results ---------------------------------------------------------------------------------
    def slices(self) -> dict:
        """The slice columns (emptied from the scanner)."""
        return {"event": vec_array(&self.s_event, np.int64),
                "track": vec_array(&self.s_track, np.int32),
                "name": vec_array(&self.s_name, np.int32),
                "ts_us": vec_array(&self.s_ts_us, np.int64),
                "ts_ps": vec_array(&self.s_ts_ps, np.int32),
                "dur_ps": vec_array(&self.s_dur, np.int64),
                "args_at": vec_array(&self.s_args_at, np.int64),
                "args_len": vec_array(&self.s_args_len, np.int64)}

    def hot(self) -> dict:
        """The pulled-out integer args by key: (slice rows, uint64 bits), keys found only."""
        out = {}
        for i in range(self.n_hot):
            if self.h_rows[i].size:
                out[self.hot_bytes[i].decode()] = (vec_array(&self.h_rows[i], np.int64),
                                                   vec_array(&self.h_values[i], np.uint64))
        return out

    def flows(self) -> dict:
        """The flow point columns (emptied from the scanner)."""
        return {"event": vec_array(&self.f_event, np.int64),
                "track": vec_array(&self.f_track, np.int32),
                "key": vec_array(&self.f_key, np.int32),
                "ts_us": vec_array(&self.f_ts_us, np.int64),
                "ts_ps": vec_array(&self.f_ts_ps, np.int32),
                "encloses": vec_array(&self.f_encloses, np.bool_)}

    def others(self) -> tuple:
        """The events left to Python: (event index, offset, length, bytes)."""
        blob = bytes(self.slow.data[:self.slow.size]) if self.slow.size else b""
        vec_free(&self.slow)
        return (vec_array(&self.o_event, np.int64), vec_array(&self.o_at, np.int64),
                vec_array(&self.o_len, np.int64), blob)

    def args_blob(self):
        """The copied args bytes (empty when args point into the source)."""
        return vec_array(&self.args, np.uint8)

    def keys(self) -> tuple:
        """The interned raw keys of tracks and name rows (see `_key_part`, `_text_part`)."""
        return interner_keys(&self.tracks), interner_keys(&self.names)

    @property
    def n_flow_keys(self) -> int:
        """How many distinct flow keys (category, id) the flow points have: their numbers."""
        return self.flow_keys.count

    def flow_key_number(self, const uint8_t[::1] key) -> int:
        """The number of a flow key written as the scanner writes them, or -1."""
        return lookup(&self.flow_keys, &key[0] if key.shape[0] else <const uint8_t*>b"",
                      key.shape[0])

    def merge_flow_keys(self, Scanner other, int32_t first_new):
        """Numbers for the other scanner's flow keys (the part of a file after this one's):
        this scanner's number where it has the key, else new numbers from first_new. Returns
        (numbers, the next new number)."""
        out = np.empty(other.flow_keys.count, np.int32)
        cdef int32_t[::1] numbers = out
        cdef int32_t k, found
        cdef int64_t start
        with nogil:
            for k in range(other.flow_keys.count):
                start = key_start(&other.flow_keys, k)
                found = lookup(&self.flow_keys, other.flow_keys.arena.data + start,
                               key_start(&other.flow_keys, k + 1) - start)
                if found < 0:
                    found = first_new
                    first_new += 1
                numbers[k] = found
        return out, first_new

    def start_in_events(self, bint array_doc):
        """Starts this scanner inside the list of events, where an element is due (a part of
        a file that another scanner reads up to here)."""
        self.state = S_EV_VALUE
        self.seen_events = True
        self.array_doc = array_doc

    @property
    def at_event(self) -> bool:
        """Whether the scan stopped where an element of the events list is due."""
        return self.state == S_EV_VALUE


cdef inline bint _plain(int kind) noexcept nogil:
    return kind == T_INT or kind == T_STRING or kind == T_MISSING or kind == T_NULL


cdef inline bint _has_backslash(const uint8_t* b, int64_t a, int64_t e) noexcept nogil:
    cdef int64_t i
    for i in range(a, e):
        if b[i] == 92:
            return True
    return False


cdef int _field(const uint8_t* k, int64_t n) noexcept nogil:
    """The event field a key names: 0 ph, 1 name, 2 cat, 3 pid, 4 tid, 5 ts, 6 dur, 7 args,
    8 id, 9 id2, 10 bp; -1 for any other."""
    if n == 2:
        if k[0] == 112 and k[1] == 104:
            return 0
        if k[0] == 116 and k[1] == 115:
            return 5
        if k[0] == 105 and k[1] == 100:
            return 8
        if k[0] == 98 and k[1] == 112:
            return 10
    elif n == 3:
        if memcmp(k, b"cat", 3) == 0:
            return 2
        if memcmp(k, b"pid", 3) == 0:
            return 3
        if memcmp(k, b"tid", 3) == 0:
            return 4
        if memcmp(k, b"dur", 3) == 0:
            return 6
        if memcmp(k, b"id2", 3) == 0:
            return 9
    elif n == 4:
        if memcmp(k, b"name", 4) == 0:
            return 1
        if memcmp(k, b"args", 4) == 0:
            return 7
    return -1


cdef int _key_part(Vec* key, const uint8_t* b, int kind, int64_t a, int64_t e,
                   int64_t ival) noexcept nogil:
    """A pid, tid or flow id in a key: 'i' + 8 bytes (an integer; missing and null read as 0)
    or 's' + length + the raw string between its quotes."""
    cdef uint32_t n
    if kind == T_STRING:
        n = <uint32_t>(e - a - 2)
        return -1 if put_u8(key, 115) < 0 or vec_put(key, &n, 4) < 0 or \
            vec_put(key, b + a + 1, n) < 0 else 0
    if kind != T_INT:
        ival = 0
    return -1 if put_u8(key, 105) < 0 or put_i64(key, ival) < 0 else 0


cdef int _text_part(Vec* key, const uint8_t* b, int kind, int64_t a, int64_t e) noexcept nogil:
    """A name or category in a key: 'n' (missing or null) or 's' + length + raw string."""
    cdef uint32_t n
    if kind != T_STRING:
        return put_u8(key, 110)
    n = <uint32_t>(e - a - 2)
    return -1 if put_u8(key, 115) < 0 or vec_put(key, &n, 4) < 0 or \
        vec_put(key, b + a + 1, n) < 0 else 0


cdef bint _decimal(const uint8_t* b, int64_t a, int64_t e, int64_t* us, int32_t* ps) noexcept nogil:
    """A JSON number without exponent as exact microseconds (floored) and picoseconds 0..999999,
    rounded half to even below the picosecond; False for other shapes or 19+ integer digits."""
    cdef bint neg = b[a] == 45
    cdef int64_t whole = 0
    cdef int64_t frac = 0
    cdef int digits = 0, k = 0
    cdef int64_t p = a + 1 if neg else a
    cdef bint rest_nonzero = False
    cdef int next_digit = 0
    while p < e and 48 <= b[p] <= 57:
        whole = whole * 10 + (b[p] - 48)
        digits += 1
        p += 1
        if digits > 18:
            return False
    if p < e and b[p] == 46:
        p += 1
        while p < e and 48 <= b[p] <= 57:
            if k < 6:
                frac = frac * 10 + (b[p] - 48)
            elif k == 6:
                next_digit = b[p] - 48
            elif b[p] != 48:
                rest_nonzero = True
            k += 1
            p += 1
    if p != e:
        return False  # an exponent, NaN or Infinity
    while k < 6:
        frac *= 10
        k += 1
    if k > 6 and (next_digit > 5 or (next_digit == 5 and (rest_nonzero or frac % 2 == 1))):
        frac += 1
        if frac == 1000000:
            frac = 0
            whole += 1
    if neg and (whole or frac):
        whole = -whole - (1 if frac else 0)
        frac = 1000000 - frac if frac else 0
    us[0] = whole
    ps[0] = <int32_t>frac
    return True


cdef bint _wide_int(const uint8_t* b, int64_t a, int64_t e, uint64_t* bits) noexcept nogil:
    """A JSON integer of any length as its low 64 bits (Python's `v & (2**64 - 1)`); False for
    fractions, exponents, NaN and Infinity."""
    cdef bint neg = b[a] == 45
    cdef uint64_t acc = 0
    cdef int64_t p = a + 1 if neg else a
    if p >= e or not (48 <= b[p] <= 57):
        return False
    while p < e:
        if not (48 <= b[p] <= 57):
            return False
        acc = acc * 10 + (b[p] - 48)
        p += 1
    bits[0] = (~acc + 1) if neg else acc
    return True


# ---- args read back by key -----------------------------------------------------------------------
def find_values(const uint8_t[::1] buf, const int64_t[::1] at, const int64_t[::1] length,
                const uint8_t[::1] key, int64_t[::1] v_at, int64_t[::1] v_len):
    """For each args object buf[at:at + length], the byte range of its top-level `key`'s
    value (the last one, as json.loads keeps): v_at -1 where absent, -2 where a key is written
    with escapes and only json.loads can tell (the caller decodes those)."""
    cdef int64_t i, n = at.shape[0]
    cdef const uint8_t* b = &buf[0] if buf.shape[0] else <const uint8_t*>b""
    cdef const uint8_t* k = &key[0] if key.shape[0] else <const uint8_t*>b""
    with nogil:
        for i in range(n):
            _find_value(b, at[i], at[i] + length[i], k, key.shape[0], &v_at[i], &v_len[i])


cdef void _find_value(const uint8_t* b, int64_t p, int64_t end, const uint8_t* key, int64_t n,
                      int64_t* v_at, int64_t* v_len) noexcept nogil:
    cdef int64_t key_at, key_end, v
    cdef bint esc
    v_at[0] = -1
    v_len[0] = 0
    if end <= p or b[p] != 123:
        return
    p = skip_ws(b, p + 1, end)
    while p < end and b[p] == 34:
        key_at = p + 1
        p = _skip_string(b, p, end, &esc)
        key_end = p - 1
        p = skip_ws(b, p, end)
        p = skip_ws(b, p + 1, end)  # past ':'
        v = _skip_json(b, p, end)
        if esc:
            v_at[0] = -2
            return
        if key_end - key_at == n and memcmp(b + key_at, key, n) == 0:
            v_at[0] = p
            v_len[0] = v - p
        p = skip_ws(b, v, end)
        if p < end and b[p] == 44:
            p = skip_ws(b, p + 1, end)
        else:
            return


cdef int64_t _skip_string(const uint8_t* b, int64_t p, int64_t end, bint* esc) noexcept nogil:
    """Past a string already checked as JSON."""
    esc[0] = False
    p += 1
    while p < end and b[p] != 34:
        if b[p] == 92:
            esc[0] = True
            p += 1
        p += 1
    return p + 1


cdef int64_t _skip_json(const uint8_t* b, int64_t p, int64_t end) noexcept nogil:
    """Past a value already checked as JSON: strings and brackets tracked, nothing else."""
    cdef int depth = 0
    cdef bint esc
    while p < end:
        if b[p] == 34:
            p = _skip_string(b, p, end, &esc)
            if depth == 0:
                return p
            continue
        if b[p] == 123 or b[p] == 91:
            depth += 1
        elif b[p] == 125 or b[p] == 93:
            if depth == 0:
                return p
            depth -= 1
            if depth == 0:
                return p + 1
        elif depth == 0 and (b[p] == 44 or b[p] == 32 or b[p] == 10 or b[p] == 13
                             or b[p] == 9):
            return p
        p += 1
    return p


def int_values(const uint8_t[::1] buf, const int64_t[::1] v_at, const int64_t[::1] v_len,
               uint8_t[::1] present, uint64_t[::1] bits):
    """Which found values are JSON integers, and their low 64 bits."""
    cdef int64_t i
    cdef const uint8_t* b = &buf[0] if buf.shape[0] else <const uint8_t*>b""
    with nogil:
        for i in range(v_at.shape[0]):
            present[i] = v_at[i] >= 0 and v_len[i] > 0 and \
                _wide_int(b, v_at[i], v_at[i] + v_len[i], &bits[i])


def gather_values(const uint8_t[::1] buf, const int64_t[::1] v_at, const int64_t[::1] v_len):
    """The values buf[v_at:v_at + v_len] as one JSON list's bytes, `[a,b,...]`: one json.loads
    then decodes a whole column (each value was checked as JSON when scanned)."""
    cdef int64_t i, n = v_at.shape[0], total = 2
    cdef const uint8_t* b = &buf[0] if buf.shape[0] else <const uint8_t*>b""
    for i in range(n):
        total += v_len[i] + 1
    out = bytearray(total)
    cdef uint8_t[::1] o = out
    cdef int64_t p = 1
    o[0] = 91
    with nogil:
        for i in range(n):
            if i:
                o[p] = 44
                p += 1
            memcpy(&o[p], b + v_at[i], v_len[i])
            p += v_len[i]
        o[p] = 93
    return out[:p + 1]
