# --------------------------------------------------------------------------- JSON values
#
# The compiled JSON parser (contract: json.pxd). Semantics are those of the Python reader
# of pyconsumer/values/json_rows.py; this parser gives a row only when it is sure to give
# the same row, and defers the rest to that reader (which also names every bad row).

from libc.math cimport HUGE_VAL, NAN
from libc.stdlib cimport free, malloc, realloc, strtod, strtof
from libc.string cimport memcmp, memcpy, memset

cdef enum:
    # deeper values go to the Python reader (which gives up near 1000 levels, as a bad row)
    _J_MAX_DEPTH = 64
    # numbers with more characters go to the Python reader (strtod needs a NUL-ended copy)
    _J_NUM_MAX = 64
    # escaped keys decoded longer than this go to the Python reader
    _J_KEY_MAX = 256
    # maps with more entries go to the Python reader (their keys are compared pairwise)
    _J_MAP_CHECKED = 64
    # objects written back as STRING with more keys go to the Python reader (the same)
    _J_TEXT_KEYS = 32

# integer seconds for a timestamp from year 2 to 9998 (the Python reader decides the edges)
cdef int64_t _J_SECONDS_MIN = -62104060800
cdef int64_t _J_SECONDS_MAX = 253370678400


cdef inline int _j_width(int kind) noexcept nogil:
    # bytes per value of the fixed-width kinds
    if kind == JK_I8:
        return 1
    if kind == JK_I16:
        return 2
    if kind == JK_I32 or kind == JK_F32 or kind == JK_DATE:
        return 4
    if kind == JK_I64 or kind == JK_F64 or kind == JK_TS or kind == JK_TSN:
        return 8
    if kind == JK_DEC:
        return 16
    return 0


@cython.final
cdef class JsonProgram:
    """The columns of an Arrow struct type for json_decode, compiled once per type.

    ``specs``: per column in pre-order, (kind, child column, first field, field count,
    precision, scale);
    ``fields``: (column, name as UTF-8 bytes) per struct field, each struct's fields together.
    pyconsumer.values.json_compiled builds these from the type; the program checks them.
    """

    def __init__(self, arrow_type, list specs, list fields):
        cdef Py_ssize_t k, f, size, slot
        cdef JSpec* sp
        cdef JField* fp
        cdef int32_t* tp
        cdef uint32_t h
        cdef bytes name
        cdef bytearray names = bytearray()
        self.arrow_type = arrow_type
        self.ncols = len(specs)
        self.nfields = len(fields)
        if self.ncols == 0 or specs[0][0] != JK_STRUCT:
            raise ValueError("a JSON program starts with its root struct column")
        self._specs = bytes(self.ncols * sizeof(JSpec))
        self._fields = bytes(max(1, self.nfields) * sizeof(JField))
        sp = <JSpec*><char*>self._specs
        fp = <JField*><char*>self._fields
        size = 0
        for k in range(self.ncols):
            kind, child, fstart, nfields, precision, scale = specs[k]
            if not JK_STRUCT <= kind <= JK_BIN:
                raise ValueError(f"column {k}: unknown kind {kind}")
            if kind == JK_DEC and not 0 <= scale <= precision <= 38 or precision < 0 or scale < 0:
                raise ValueError(f"column {k}: DECIMAL({precision},{scale}) is not a decimal128")
            if (kind == JK_LIST or kind == JK_MAP) and not k < child < self.ncols:
                raise ValueError(f"column {k}: its item column {child} is not after it")
            if kind == JK_STRUCT and not (0 <= fstart and 0 <= nfields
                                          and fstart + nfields <= self.nfields):
                raise ValueError(f"column {k}: fields {fstart}+{nfields} out of the table")
            sp[k].kind = kind
            sp[k].width = _j_width(kind)
            sp[k].child = child
            sp[k].fstart = fstart
            sp[k].nfields = nfields
            sp[k].tstart = size
            sp[k].tmask = 0
            sp[k].precision = precision
            sp[k].scale = scale
            if kind == JK_STRUCT:
                slot = 2
                while slot < 2 * nfields:
                    slot *= 2
                sp[k].tmask = <uint32_t>(slot - 1)
                size += slot
        for f in range(self.nfields):
            col, name = fields[f]
            if not 0 < col < self.ncols:
                raise ValueError(f"field {f}: column {col} out of the program")
            fp[f].col = col
            fp[f].name_at = len(names)
            fp[f].name_len = len(name)
            names += name
        # 8 zero bytes after the last name: a key is compared a word at a time (_j_key_is)
        self._names = bytes(names) + bytes(8)
        self._table = bytes(max(1, size) * sizeof(int32_t))
        tp = <int32_t*><char*>self._table
        for k in range(size):
            tp[k] = -1
        for k in range(self.ncols):
            if sp[k].kind != JK_STRUCT:
                continue
            for f in range(sp[k].fstart, sp[k].fstart + sp[k].nfields):
                name = fields[f][1]
                h = _j_hash(<const uint8_t*><char*>name, len(name))
                slot = h & sp[k].tmask
                while tp[sp[k].tstart + slot] >= 0:
                    if fields[tp[sp[k].tstart + slot]][1] == name:
                        raise ValueError(f"the field name {name!r} is twice in one struct")
                    slot = (slot + 1) & sp[k].tmask
                tp[sp[k].tstart + slot] = <int32_t>f


cdef inline bint _j_same(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    # keys are short: a loop here costs less than a call to memcmp
    cdef Py_ssize_t i
    if n > 16:
        return memcmp(a, b, n) == 0
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef uint64_t _J_KEYMASK[9]      # the first k bytes of a word (any byte order)


cdef void _j_key_masks() noexcept:
    cdef uint8_t ones[8]
    cdef int k
    for k in range(9):
        memset(ones, 0, 8)
        memset(ones, 0xFF, k)
        memcpy(&_J_KEYMASK[k], ones, 8)

_j_key_masks()


cdef inline bint _j_key_is(const uint8_t* name, const uint8_t* key, Py_ssize_t n,
                           const uint8_t* key_end) noexcept nogil:
    # a field's name (8 readable bytes past it: the names end padded) is the key of n bytes
    # (readable up to key_end): keys of up to 8 bytes are one masked word compare
    cdef uint64_t a, b
    if n <= 8 and key + 8 <= key_end:
        memcpy(&a, name, 8)
        memcpy(&b, key, 8)
        return ((a ^ b) & _J_KEYMASK[n]) == 0
    return _j_same(name, key, n)


cdef inline uint32_t _j_hash(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    # FNV-1a: the same loop runs over a key while its end is looked for
    cdef uint32_t h = 2166136261u
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ s[i]) * 16777619u
    return h


# ------------------------------------------------------------------ reads and columns

cdef inline int _jpeek(const JParse* st) noexcept nogil:
    # the one read of the input: the next byte, or -1 at the end of the value
    if st.p < st.end:
        return st.p[0]
    return -1


cdef inline int _jpeek_at(const JParse* st, Py_ssize_t k) noexcept nogil:
    if k < st.end - st.p:
        return st.p[k]
    return -1


cdef inline void _j_ws(JParse* st) noexcept nogil:
    # JSON's whitespace (the Python reader's json module knows no other inside a value)
    cdef int b = _jpeek(st)
    while b == 32 or b == 10 or b == 13 or b == 9:
        st.p += 1
        b = _jpeek(st)


cdef inline bint _j_lit(JParse* st, const char* word, Py_ssize_t n) noexcept nogil:
    # the literal word at p (passed over), or False
    if st.end - st.p < n or not _j_same(st.p, <const uint8_t*>word, n):
        return False
    st.p += n
    return True


cdef int _j_grow(JCol* col, const JSpec* sp, Py_ssize_t need, Py_ssize_t bneed) noexcept nogil:
    # room for need entries (and bneed string bytes): J_OK, J_NOMEM or J_BIG
    cdef Py_ssize_t cap, vbytes
    cdef void* q
    if need > col.cap:
        cap = col.cap * 2
        if cap < need:
            cap = need
        if cap < 64:
            cap = 64
        if cap >= 0x7fffffff:
            return J_BIG
        q = realloc(col.valid, cap // 8 + 8)
        if q == NULL:
            return J_NOMEM
        col.valid = <uint8_t*>q
        if sp.kind == JK_BOOL:
            vbytes = cap // 8 + 8
        elif sp.kind == JK_LIST or sp.kind == JK_STR or sp.kind == JK_MAP or sp.kind == JK_BIN:
            vbytes = (cap + 1) * 4
        else:
            vbytes = cap * sp.width
        if vbytes:
            q = realloc(col.data, vbytes)
            if q == NULL:
                return J_NOMEM
            col.data = <uint8_t*>q
        col.cap = cap
    if bneed > col.bcap:
        cap = col.bcap * 2
        if cap < bneed:
            cap = bneed
        if cap < 256:
            cap = 256
        if bneed >= 0x7fffffff:
            return J_BIG
        if cap >= 0x7fffffff:
            cap = 0x7fffffff - 1
        q = realloc(col.bytes, cap)
        if q == NULL:
            return J_NOMEM
        col.bytes = <uint8_t*>q
        col.bcap = cap
    return J_OK


cdef inline int _j_room(JParse* st, int c) noexcept nogil:
    # room for one more entry in column c
    cdef JCol* col = &st.cols[c]
    if col.n + 1 < col.cap:
        return J_OK
    return _j_grow(col, &st.specs[c], col.n + 2, 0)


cdef inline void _j_valid(JCol* col) noexcept nogil:
    col.valid[col.n >> 3] |= <uint8_t>(1 << (col.n & 7))


cdef int _j_null(JParse* st, int c) noexcept nogil:
    cdef const JSpec* sp = &st.specs[c]
    cdef JCol* col = &st.cols[c]
    cdef int r = _j_room(st, c)
    cdef int f
    if r:
        return r
    col.valid[col.n >> 3] &= <uint8_t>~(1 << (col.n & 7))
    if sp.kind == JK_STRUCT:
        for f in range(sp.fstart, sp.fstart + sp.nfields):
            r = _j_null(st, st.fields[f].col)
            if r:
                return r
    elif sp.kind == JK_LIST or sp.kind == JK_MAP:
        (<int32_t*>col.data)[col.n + 1] = <int32_t>st.cols[sp.child].n
    elif sp.kind == JK_STR or sp.kind == JK_BIN:
        (<int32_t*>col.data)[col.n + 1] = <int32_t>col.used
    elif sp.kind == JK_BOOL:
        col.data[col.n >> 3] &= <uint8_t>~(1 << (col.n & 7))
    else:
        memset(col.data + col.n * sp.width, 0, sp.width)
    col.nulls += 1
    col.n += 1
    return J_OK


# ------------------------------------------------------------------ strings

cdef inline int _j_hex4(JParse* st, uint32_t* out) noexcept nogil:
    # four hex digits at p (passed over)
    cdef uint32_t v = 0
    cdef int i, b
    for i in range(4):
        b = _jpeek(st)
        if 48 <= b <= 57:
            v = v * 16 + <uint32_t>(b - 48)
        elif 97 <= b <= 102:
            v = v * 16 + <uint32_t>(b - 87)
        elif 65 <= b <= 70:
            v = v * 16 + <uint32_t>(b - 55)
        else:
            return J_DEFER
        st.p += 1
    out[0] = v
    return J_OK


cdef inline int _j_escape(JParse* st, uint8_t* out, Py_ssize_t* wrote) noexcept nogil:
    # one escape (p past its backslash) as UTF-8 into out (NULL: checked only)
    cdef int b = _jpeek(st)
    cdef uint32_t u, lo
    cdef uint8_t ch
    st.p += 1
    if b == 34 or b == 92 or b == 47:
        ch = <uint8_t>b
    elif b == 98:
        ch = 8
    elif b == 102:
        ch = 12
    elif b == 110:
        ch = 10
    elif b == 114:
        ch = 13
    elif b == 116:
        ch = 9
    elif b == 117:
        if _j_hex4(st, &u):
            return J_DEFER
        if out == NULL:
            wrote[0] = 0
            return J_OK
        if 0xD800 <= u <= 0xDBFF:
            # a pair, or a lone surrogate: a bad row in a kept string
            if _jpeek(st) != 92 or _jpeek_at(st, 1) != 117:
                return J_DEFER
            st.p += 2
            if _j_hex4(st, &lo) or not 0xDC00 <= lo <= 0xDFFF:
                return J_DEFER
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
        elif 0xDC00 <= u <= 0xDFFF:
            return J_DEFER
        if u < 0x80:
            out[0] = <uint8_t>u
            wrote[0] = 1
        elif u < 0x800:
            out[0] = <uint8_t>(0xC0 | (u >> 6))
            out[1] = <uint8_t>(0x80 | (u & 0x3F))
            wrote[0] = 2
        elif u < 0x10000:
            out[0] = <uint8_t>(0xE0 | (u >> 12))
            out[1] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
            out[2] = <uint8_t>(0x80 | (u & 0x3F))
            wrote[0] = 3
        else:
            out[0] = <uint8_t>(0xF0 | (u >> 18))
            out[1] = <uint8_t>(0x80 | ((u >> 12) & 0x3F))
            out[2] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
            out[3] = <uint8_t>(0x80 | (u & 0x3F))
            wrote[0] = 4
        return J_OK
    else:
        return J_DEFER
    if out != NULL:
        out[0] = ch
    wrote[0] = 1
    return J_OK


cdef uint8_t _J_PLAIN[256]      # 1: a string byte that needs no look (not ", \\, a control)


cdef void _j_tables() noexcept:
    cdef int b
    for b in range(256):
        _J_PLAIN[b] = 1 if (b >= 32 and b != 34 and b != 92) else 0

_j_tables()


cdef inline void _j_plain(JParse* st) noexcept nogil:
    # past the run of plain string bytes at p
    cdef const uint8_t* p = st.p
    cdef const uint8_t* end = st.end
    while p < end and _J_PLAIN[p[0]]:
        p += 1
    st.p = p


cdef int _j_skip_string(JParse* st) noexcept nogil:
    # a string checked as the json module checks it (p past its opening quote)
    cdef int b
    cdef Py_ssize_t wrote
    while True:
        _j_plain(st)
        b = _jpeek(st)
        if b == 34:
            st.p += 1
            return J_OK
        if b < 32:             # the end (-1) or a raw control character
            return J_DEFER
        st.p += 1
        if b == 92 and _j_escape(st, NULL, &wrote):
            return J_DEFER


cdef inline bint _j_has_high(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    cdef uint64_t acc = 0
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        acc |= w
        i += 8
    while i < n:
        acc |= s[i]
        i += 1
    return (acc & 0x8080808080808080ULL) != 0


cdef int _j_string(JParse* st, int c) noexcept nogil:
    # a string (p at its opening quote) into string column c
    cdef JCol* col = &st.cols[c]
    cdef int r = _j_room(st, c)
    cdef int b
    cdef Py_ssize_t wrote, start
    cdef bint high
    cdef uint8_t* out
    cdef const uint8_t* run
    if r:
        return r
    # the rest of the value bounds the string's decoded bytes
    if col.used + (st.end - st.p) > col.bcap:
        r = _j_grow(col, &st.specs[c], 0, col.used + (st.end - st.p))
        if r:
            return r
    st.p += 1
    start = col.used
    out = col.bytes + col.used
    while True:
        run = st.p
        _j_plain(st)
        if st.p > run:
            memcpy(out, run, st.p - run)
            out += st.p - run
        b = _jpeek(st)
        if b == 34:
            st.p += 1
            break
        if b < 32:
            return J_DEFER
        st.p += 1
        if _j_escape(st, out, &wrote):      # b is the backslash
            return J_DEFER
        out += wrote
    col.used = out - col.bytes
    # any byte over 127: the whole value is checked for UTF-8
    high = _j_has_high(col.bytes + start, col.used - start)
    # the Python reader replaces invalid UTF-8: such a value is left to it
    if high and not pyx_utf8_valid(col.bytes + start, col.used - start):
        return J_DEFER
    _j_valid(col)
    (<int32_t*>col.data)[col.n + 1] = <int32_t>col.used
    col.n += 1
    return J_OK


cdef inline void _j_put_utf8(uint8_t** out, uint32_t u) noexcept nogil:
    cdef uint8_t* o = out[0]
    if u < 0x80:
        o[0] = <uint8_t>u
        out[0] = o + 1
    elif u < 0x800:
        o[0] = <uint8_t>(0xC0 | (u >> 6))
        o[1] = <uint8_t>(0x80 | (u & 0x3F))
        out[0] = o + 2
    elif u < 0x10000:
        o[0] = <uint8_t>(0xE0 | (u >> 12))
        o[1] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
        o[2] = <uint8_t>(0x80 | (u & 0x3F))
        out[0] = o + 3
    else:
        o[0] = <uint8_t>(0xF0 | (u >> 18))
        o[1] = <uint8_t>(0x80 | ((u >> 12) & 0x3F))
        o[2] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
        o[3] = <uint8_t>(0x80 | (u & 0x3F))
        out[0] = o + 4


cdef inline void _j_put_escaped(uint8_t** out, uint32_t u) noexcept nogil:
    # one character as json.dumps(ensure_ascii=False) writes it: a esc escape, \u00xx for
    # the other controls, the rest as UTF-8
    cdef uint8_t* o = out[0]
    cdef uint8_t esc = 0
    if u == 34 or u == 92:
        esc = <uint8_t>u
    elif u == 8:
        esc = 98
    elif u == 12:
        esc = 102
    elif u == 10:
        esc = 110
    elif u == 13:
        esc = 114
    elif u == 9:
        esc = 116
    if esc:
        o[0] = 92
        o[1] = esc
        out[0] = o + 2
    elif u < 32:
        o[0] = 92
        o[1] = 117
        o[2] = 48
        o[3] = 48
        o[4] = <uint8_t>(48 + (u >> 4))
        o[5] = <uint8_t>((48 + (u & 15)) if (u & 15) < 10 else (87 + (u & 15)))
        out[0] = o + 6
    else:
        _j_put_utf8(out, u)


cdef int _j_write_string(JParse* st, uint8_t** out) noexcept nogil:
    # a string (p at its opening quote) written back as json.dumps(ensure_ascii=False) does;
    # never longer than its text
    cdef uint8_t* o = out[0]
    cdef uint8_t* first = o
    cdef const uint8_t* run
    cdef int b
    cdef uint32_t u, lo
    o[0] = 34
    o += 1
    st.p += 1
    while True:
        run = st.p
        _j_plain(st)
        if st.p > run:
            memcpy(o, run, st.p - run)
            o += st.p - run
        b = _jpeek(st)
        if b == 34:
            st.p += 1
            break
        if b < 32:
            return J_DEFER
        st.p += 1
        b = _jpeek(st)
        st.p += 1
        if b == 34 or b == 92:
            u = <uint32_t>b
        elif b == 47:
            u = 47
        elif b == 98:
            u = 8
        elif b == 102:
            u = 12
        elif b == 110:
            u = 10
        elif b == 114:
            u = 13
        elif b == 116:
            u = 9
        elif b == 117:
            if _j_hex4(st, &u):
                return J_DEFER
            if 0xD800 <= u <= 0xDBFF:
                if _jpeek(st) != 92 or _jpeek_at(st, 1) != 117:
                    return J_DEFER
                st.p += 2
                if _j_hex4(st, &lo) or not 0xDC00 <= lo <= 0xDFFF:
                    return J_DEFER
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
            elif 0xDC00 <= u <= 0xDFFF:
                return J_DEFER
        else:
            return J_DEFER
        _j_put_escaped(&o, u)
    o[0] = 34
    o += 1
    if _j_has_high(first, o - first) and not pyx_utf8_valid(first, o - first):
        return J_DEFER
    out[0] = o
    return J_OK


cdef int _j_write_json(JParse* st, uint8_t** out) noexcept nogil:
    # one value (p at it) written back as the Python reader's compact JSON text: integers as
    # written, strings as json.dumps writes them, no space; a fraction (rewritten through a
    # double, as Java would), a key met twice in one object (or an object of more than
    # _J_TEXT_KEYS keys) is left to that reader
    cdef int b = _jpeek(st)
    cdef const uint8_t* s = st.p
    cdef Py_ssize_t n, k
    cdef bint integral
    cdef int close, r
    cdef int nk = 0
    cdef uint8_t* keys[_J_TEXT_KEYS]
    cdef Py_ssize_t klen[_J_TEXT_KEYS]
    if b == 34:
        return _j_write_string(st, out)
    if b == 123 or b == 91:
        if st.depth >= _J_MAX_DEPTH:
            return J_DEFER
        st.depth += 1
        close = b + 2
        out[0][0] = <uint8_t>b
        out[0] += 1
        st.p += 1
        _j_ws(st)
        if _jpeek(st) != close:
            while True:
                if b == 123:
                    if _jpeek(st) != 34 or nk == _J_TEXT_KEYS:
                        return J_DEFER
                    keys[nk] = out[0]
                    if _j_write_string(st, out):
                        return J_DEFER
                    klen[nk] = out[0] - keys[nk]
                    for k in range(nk):
                        if klen[k] == klen[nk] and memcmp(keys[k], keys[nk], klen[nk]) == 0:
                            return J_DEFER
                    nk += 1
                    _j_ws(st)
                    if _jpeek(st) != 58:
                        return J_DEFER
                    st.p += 1
                    out[0][0] = 58
                    out[0] += 1
                    _j_ws(st)
                r = _j_write_json(st, out)
                if r:
                    return r
                _j_ws(st)
                if _jpeek(st) == close:
                    break
                if _jpeek(st) != 44:
                    return J_DEFER
                st.p += 1
                out[0][0] = 44
                out[0] += 1
                _j_ws(st)
        st.p += 1
        out[0][0] = <uint8_t>close
        out[0] += 1
        st.depth -= 1
        return J_OK
    if b == 116 and _j_lit(st, "true", 4):
        n = 4
    elif b == 102 and _j_lit(st, "false", 5):
        n = 5
    elif b == 110 and _j_lit(st, "null", 4):
        n = 4
    elif b == 78 and _j_lit(st, "NaN", 3):
        n = 3
    elif b == 73 and _j_lit(st, "Infinity", 8):
        n = 8
    elif b == 45 and _jpeek_at(st, 1) == 73:
        if not _j_lit(st, "-Infinity", 9):
            return J_DEFER
        n = 9
    elif (b == 45 or 48 <= b <= 57) and _j_number(st, &s, &n, &integral) == J_OK and integral:
        pass
    else:
        return J_DEFER
    memcpy(out[0], s, n)
    out[0] += n
    return J_OK


cdef int _j_text(JParse* st, int c, int b) noexcept nogil:
    # a non-string value for a STRING column: its JSON text, as the Python reader writes it
    cdef JCol* col = &st.cols[c]
    cdef uint8_t* out
    cdef int r = _j_room(st, c)
    if r:
        return r
    # the rest of the value bounds the text written back
    if col.used + (st.end - st.p) > col.bcap:
        r = _j_grow(col, &st.specs[c], 0, col.used + (st.end - st.p))
        if r:
            return r
    out = col.bytes + col.used
    r = _j_write_json(st, &out)
    if r:
        return r
    col.used = out - col.bytes
    _j_valid(col)
    (<int32_t*>col.data)[col.n + 1] = <int32_t>col.used
    col.n += 1
    return J_OK


cdef int8_t _J_B64[256]          # a base64 digit's value, or -1


cdef void _j_b64_table() noexcept:
    cdef int b
    for b in range(256):
        _J_B64[b] = -1
    for b in range(26):
        _J_B64[65 + b] = <int8_t>b
        _J_B64[97 + b] = <int8_t>(26 + b)
    for b in range(10):
        _J_B64[48 + b] = <int8_t>(52 + b)
    _J_B64[43] = 62
    _J_B64[47] = 63

_j_b64_table()


cdef int _j_base64(JParse* st, int c) noexcept nogil:
    # a BINARY value: base64 text (p at its opening quote) decoded into column c; only the
    # canonical form (whole quads, padding only to end the last, no stray bits) is read here,
    # the rest (line breaks, other padding) is the Python reader's
    cdef JCol* col = &st.cols[c]
    cdef const uint8_t* s
    cdef Py_ssize_t n, i, pad = 0
    cdef uint32_t q
    cdef int r, k
    cdef uint8_t* out
    if _j_raw_text(st, &s, &n) or n % 4:
        return J_DEFER
    if n and s[n - 1] == 61:
        pad = 2 if s[n - 2] == 61 else 1
    r = _j_room(st, c)
    if r:
        return r
    if col.used + n > col.bcap:
        r = _j_grow(col, &st.specs[c], 0, col.used + n)
        if r:
            return r
    out = col.bytes + col.used
    i = 0
    while i < n:
        q = 0
        for k in range(4):
            if i + k >= n - pad:
                q <<= 6             # padding
            elif _J_B64[s[i + k]] < 0:
                return J_DEFER
            else:
                q = (q << 6) | <uint32_t>_J_B64[s[i + k]]
        out[0] = <uint8_t>(q >> 16)
        out[1] = <uint8_t>(q >> 8)
        out[2] = <uint8_t>q
        if i + 4 >= n and pad:
            # the last quad: 3 - pad bytes, the bits under the padding must be zero
            if (pad == 1 and (q & 0xFF)) or (pad == 2 and (q & 0xFFFF)):
                return J_DEFER
            out += 3 - pad
        else:
            out += 3
        i += 4
    col.used = out - col.bytes
    _j_valid(col)
    (<int32_t*>col.data)[col.n + 1] = <int32_t>col.used
    col.n += 1
    return J_OK


cdef int _j_raw_text(JParse* st, const uint8_t** text, Py_ssize_t* n) noexcept nogil:
    # a string without escapes (p at its opening quote): its bytes; escapes are deferred
    cdef int b
    st.p += 1
    text[0] = st.p
    while True:
        b = _jpeek(st)
        if b == 34:
            n[0] = st.p - text[0]
            st.p += 1
            return J_OK
        if b < 32 or b == 92 or b >= 128:
            return J_DEFER
        st.p += 1


# ------------------------------------------------------------------ numbers

cdef int _j_number(JParse* st, const uint8_t** text, Py_ssize_t* n, bint* integral) noexcept nogil:
    # a number by the json module's grammar (p at its first byte); a number cut short
    # ("1.", "1e") is a bad row, deferred
    cdef int b
    text[0] = st.p
    integral[0] = True
    if _jpeek(st) == 45:
        st.p += 1
    b = _jpeek(st)
    if b == 48:
        st.p += 1
    elif 49 <= b <= 57:
        st.p += 1
        while 48 <= _jpeek(st) <= 57:
            st.p += 1
    else:
        return J_DEFER
    if _jpeek(st) == 46:
        st.p += 1
        if not 48 <= _jpeek(st) <= 57:
            return J_DEFER
        while 48 <= _jpeek(st) <= 57:
            st.p += 1
        integral[0] = False
    b = _jpeek(st)
    if b == 101 or b == 69:
        st.p += 1
        b = _jpeek(st)
        if b == 43 or b == 45:
            st.p += 1
        if not 48 <= _jpeek(st) <= 57:
            return J_DEFER
        while 48 <= _jpeek(st) <= 57:
            st.p += 1
        integral[0] = False
    n[0] = st.p - text[0]
    return J_OK


cdef int _j_integer(const uint8_t* s, Py_ssize_t n, int bits, int64_t* out) noexcept nogil:
    # an integral number's text in a signed range of bits, or J_DEFER (out of range)
    cdef bint neg = s[0] == 45
    cdef Py_ssize_t i = 1 if neg else 0
    cdef uint64_t v = 0
    cdef uint64_t limit = (<uint64_t>1) << (bits - 1)
    if n - i > 19:
        return J_DEFER
    while i < n:
        v = v * 10 + <uint64_t>(s[i] - 48)
        i += 1
    if neg:
        if v > limit:
            return J_DEFER
        out[0] = <int64_t>(0 - v)
    else:
        if v >= limit:
            return J_DEFER
        out[0] = <int64_t>v
    return J_OK


cdef extern from "float.h":
    int LDBL_MANT_DIG

# powers of ten up to 10**27 are exact in a 64-bit significand (5**27 < 2**64)
cdef long double _J_POW10L[28]
# whether long double arithmetic here rounds to a 64-bit significand (x87 extended precision;
# not where long double is double, nor where the FPU is set to double precision)
cdef bint _J_EXTENDED = False


cdef void _j_pow10l() noexcept:
    global _J_EXTENDED
    cdef int k
    cdef volatile long double one = 1.0
    cdef volatile long double tiny = 1.0
    _J_POW10L[0] = 1.0
    for k in range(1, 28):
        _J_POW10L[k] = _J_POW10L[k - 1] * 10
    cdef long double three = 3.0
    cdef uint64_t bits = 0
    for k in range(62):
        tiny = tiny / 2
    # the x87 format: the significand (its leading 1 explicit) in the first 8 bytes
    memcpy(&bits, &three, 8)
    _J_EXTENDED = (LDBL_MANT_DIG == 64 and one + tiny != one
                   and bits == 0xC000000000000000ULL)


_j_pow10l()


cdef inline bint _j_double_extended(uint64_t m, int scale, double* out) noexcept nogil:
    # m * 10**scale (m < 10**19, |scale| <= 27) correctly rounded, through one correctly
    # rounded long double product or quotient (the inputs are exact): its error is under half
    # a unit of the 64-bit significand, so rounding it to 53 bits gives the double of the
    # exact value unless its 11 lower bits sit exactly on a halfway point (then False: strtod)
    cdef long double y
    cdef uint64_t bits
    if scale >= 0:
        y = <long double>m * _J_POW10L[scale]
    else:
        y = <long double>m / _J_POW10L[-scale]
    memcpy(&bits, &y, 8)            # its significand (_J_EXTENDED: the x87 format)
    if (bits & 0x7FF) == 0x400:
        return False
    out[0] = <double>y
    return True


cdef double[23] _J_POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                            1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


cdef int _j_double(const uint8_t* s, Py_ssize_t n, double* out) noexcept nogil:
    # the correctly rounded double of a number's text, as Python's float() gives it: at most
    # 15 digits and a power of ten up to 22 are exact doubles, so one product or quotient
    # rounds correctly (Clinger); other numbers go through strtod
    cdef char buf[_J_NUM_MAX + 1]
    cdef Py_ssize_t i = 0
    cdef int digits = 0, scale = 0, e = 0, esign = 1
    cdef uint64_t m = 0
    cdef bint neg = s[0] == 45
    if neg:
        i = 1
    while i < n and 48 <= s[i] <= 57:
        m = m * 10 + (s[i] - 48)
        digits += 1
        i += 1
    if i < n and s[i] == 46:
        i += 1
        while i < n and 48 <= s[i] <= 57:
            m = m * 10 + (s[i] - 48)
            digits += 1
            scale -= 1
            i += 1
    if i < n:
        i += 1                  # e or E: the grammar was checked
        if s[i] == 45 or s[i] == 43:
            esign = -1 if s[i] == 45 else 1
            i += 1
        while i < n and e < 1000:
            e = e * 10 + (s[i] - 48)
            i += 1
        scale += esign * e
    if digits <= 15 and i == n and -22 <= scale <= 22:
        out[0] = <double>m * _J_POW10[scale] if scale >= 0 else <double>m / _J_POW10[-scale]
        if neg:
            out[0] = -out[0]
        return J_OK
    # up to 19 digits (a double's shortest text has up to 17) m is exact in 64 bits
    if (_J_EXTENDED and digits <= 19 and i == n and -27 <= scale <= 27
            and _j_double_extended(m, scale, out)):
        if neg:
            out[0] = -out[0]
        return J_OK
    if n > _J_NUM_MAX:
        return J_DEFER
    memcpy(buf, s, n)
    buf[n] = 0
    out[0] = strtod(buf, NULL)
    return J_OK


cdef int _j_constant(const uint8_t* s, Py_ssize_t n, bint quoted, double* out) noexcept nogil:
    # NaN and the infinities: bare as the json module reads them, quoted as Spark's list has
    if n == 3 and memcmp(s, b"NaN", 3) == 0:
        out[0] = NAN
    elif (n == 8 and memcmp(s, b"Infinity", 8) == 0) or (
            quoted and ((n == 9 and memcmp(s, b"+Infinity", 9) == 0)
                        or (n == 3 and memcmp(s, b"INF", 3) == 0)
                        or (n == 4 and memcmp(s, b"+INF", 4) == 0))):
        out[0] = HUGE_VAL
    elif (n == 9 and memcmp(s, b"-Infinity", 9) == 0) or (
            quoted and n == 4 and memcmp(s, b"-INF", 4) == 0):
        out[0] = -HUGE_VAL
    else:
        return J_DEFER
    return J_OK


cdef float[11] _J_POW10F = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]


cdef int _j_single(const uint8_t* s, Py_ssize_t n, float* out) noexcept nogil:
    # the correctly rounded float of a number's text (one rounding, as pyarrow.json and
    # Jackson read a FLOAT): Clinger's fast path for 7 digits and powers of ten up to 10
    cdef char buf[_J_NUM_MAX + 1]
    cdef Py_ssize_t i = 0
    cdef int digits = 0, scale = 0
    cdef uint32_t m = 0
    cdef bint neg = s[0] == 45
    if neg:
        i = 1
    while i < n and 48 <= s[i] <= 57 and digits < 8:
        m = m * 10 + (s[i] - 48)
        digits += 1
        i += 1
    if i < n and s[i] == 46:
        i += 1
        while i < n and 48 <= s[i] <= 57 and digits < 8:
            m = m * 10 + (s[i] - 48)
            digits += 1
            scale -= 1
            i += 1
    if i == n and digits <= 7 and -10 <= scale:
        out[0] = <float>m / _J_POW10F[-scale]
        if neg:
            out[0] = -out[0]
        return J_OK
    if n > _J_NUM_MAX:
        return J_DEFER
    memcpy(buf, s, n)
    buf[n] = 0
    out[0] = strtof(buf, NULL)
    return J_OK


cdef int _j_float(JParse* st, bint single, double* out) noexcept nogil:
    # a FLOAT or DOUBLE value: a number, a bare constant, or a quoted constant; a FLOAT's
    # number is rounded once from its text to a float (held exactly by the double out)
    cdef int b = _jpeek(st)
    cdef const uint8_t* s
    cdef Py_ssize_t n
    cdef bint integral
    cdef float f
    if b == 34:
        if _j_raw_text(st, &s, &n):
            return J_DEFER
        return _j_constant(s, n, True, out)
    if b == 78 and _j_lit(st, "NaN", 3):
        out[0] = NAN
        return J_OK
    if b == 73 and _j_lit(st, "Infinity", 8):
        out[0] = HUGE_VAL
        return J_OK
    if b == 45 and _jpeek_at(st, 1) == 73:
        if _j_lit(st, "-Infinity", 9):
            out[0] = -HUGE_VAL
            return J_OK
        return J_DEFER
    if _j_number(st, &s, &n, &integral):
        return J_DEFER
    if single:
        if _j_single(s, n, &f):
            return J_DEFER
        out[0] = f
        return J_OK
    return _j_double(s, n, out)


# ------------------------------------------------------------------ dates and times

cdef inline int _j_digits(const uint8_t* s, Py_ssize_t n, Py_ssize_t* i, int most, int* out) noexcept nogil:
    # 1..most ASCII digits at s[i] (greedy, as the Python reader's pattern takes them)
    cdef int k = 0
    cdef int v = 0
    while k < most and i[0] < n and 48 <= s[i[0]] <= 57:
        v = v * 10 + (s[i[0]] - 48)
        i[0] += 1
        k += 1
    out[0] = v
    return k


cdef inline int64_t _j_days(int y, int m, int d) noexcept nogil:
    # days since 1970-01-01 of a proleptic Gregorian date
    cdef int64_t yy = y - (1 if m <= 2 else 0)
    cdef int64_t era = (yy if yy >= 0 else yy - 399) // 400
    cdef int64_t yoe = yy - era * 400
    cdef int64_t mp = (m + 9) % 12
    cdef int64_t doy = (153 * mp + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline int _j_month_days(int y, int m) noexcept nogil:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    if m == 4 or m == 6 or m == 9 or m == 11:
        return 30
    return 31


cdef int _j_ymd(const uint8_t* s, Py_ssize_t n, Py_ssize_t* i, int* parts, int* y, int* m,
                int* d) noexcept nogil:
    # YYYY[-M[M][-D[D]]] (parts: how many were written): four-digit years only (others go to
    # the Python reader), a day that exists
    if _j_digits(s, n, i, 4, y) != 4 or (i[0] < n and 48 <= s[i[0]] <= 57):
        return J_DEFER
    m[0] = 1
    d[0] = 1
    parts[0] = 1
    if i[0] + 1 < n and s[i[0]] == 45 and 48 <= s[i[0] + 1] <= 57:
        i[0] += 1
        _j_digits(s, n, i, 2, m)
        parts[0] = 2
        if i[0] + 1 < n and s[i[0]] == 45 and 48 <= s[i[0] + 1] <= 57:
            i[0] += 1
            _j_digits(s, n, i, 2, d)
            parts[0] = 3
    # years 1 and 9999 are left to the Python reader (a zone may push them out of range)
    if y[0] < 2 or y[0] > 9998 or not 1 <= m[0] <= 12 or not 1 <= d[0] <= _j_month_days(y[0], m[0]):
        return J_DEFER
    return J_OK


cdef int _j_date_text(const uint8_t* s, Py_ssize_t n, int32_t* out) noexcept nogil:
    # a DATE text: the date, then nothing, or after a full date [T ] and anything
    cdef Py_ssize_t i = 0
    cdef int parts, y, m, d
    if _j_ymd(s, n, &i, &parts, &y, &m, &d):
        return J_DEFER
    if i < n and not (parts == 3 and (s[i] == 84 or s[i] == 32)):
        return J_DEFER
    out[0] = <int32_t>_j_days(y, m, d)
    return J_OK


cdef int _j_zone(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, int* minutes) noexcept nogil:
    # what follows the time: nothing, Z, or +H, +HH, +HMM, +HHMM, +H:MM, +HH:MM (sign either);
    # hours and minutes as the Python reader takes them (unchecked, as it leaves them)
    cdef int sign, nd, v, zh, zm
    minutes[0] = 0
    if i == n:
        return J_OK
    if s[i] == 90:
        return J_OK if i + 1 == n else J_DEFER
    if s[i] != 43 and s[i] != 45:
        return J_DEFER
    sign = -1 if s[i] == 45 else 1
    i += 1
    nd = _j_digits(s, n, &i, 4, &v)
    if i < n and s[i] == 58:
        if nd < 1 or nd > 2:
            return J_DEFER
        i += 1
        zh = v
        if _j_digits(s, n, &i, 2, &zm) != 2:
            return J_DEFER
    elif nd == 0:
        return J_DEFER
    elif nd <= 2:
        zh, zm = v, 0
    else:
        zh, zm = v // 100, v % 100
    if i != n:
        return J_DEFER
    minutes[0] = sign * (zh * 60 + zm)
    return J_OK


cdef int _j_timestamp_text(const uint8_t* s, Py_ssize_t n, bint zoned, int64_t* out) noexcept nogil:
    # a TIMESTAMP text: a date, after a full date [T ]h[h][:m[m][:s[s][.fraction]]], a zone
    # (a TIMESTAMP_NTZ text has none: a zone makes it a bad row, the Python reader's)
    cdef Py_ssize_t i = 0
    cdef int k, parts, y, m, d, zone
    cdef int hh = 0, mi = 0, ss = 0
    cdef int64_t micros = 0
    if _j_ymd(s, n, &i, &parts, &y, &m, &d):
        return J_DEFER
    if parts == 3 and i + 1 < n and (s[i] == 84 or s[i] == 32) and 48 <= s[i + 1] <= 57:
        i += 1
        _j_digits(s, n, &i, 2, &hh)
        if i + 1 < n and s[i] == 58 and 48 <= s[i + 1] <= 57:
            i += 1
            _j_digits(s, n, &i, 2, &mi)
            if i + 1 < n and s[i] == 58 and 48 <= s[i + 1] <= 57:
                i += 1
                _j_digits(s, n, &i, 2, &ss)
                if i < n and s[i] == 46:
                    i += 1
                    k = 0
                    while i < n and 48 <= s[i] <= 57:
                        if k < 6:
                            micros = micros * 10 + (s[i] - 48)
                        k += 1
                        i += 1
                    if k > 9:
                        return J_DEFER
                    while k < 6:
                        micros *= 10
                        k += 1
    if hh > 23 or mi > 59 or ss > 59 or (not zoned and i < n) or _j_zone(s, n, i, &zone):
        return J_DEFER
    out[0] = ((_j_days(y, m, d) * 86400 + hh * 3600 + mi * 60 + ss - <int64_t>zone * 60)
              * 1000000 + micros)
    return J_OK


# ------------------------------------------------------------------ decimals

cdef extern from *:
    # gcc's 128-bit integers hold every decimal128 (precision up to 38)
    ctypedef unsigned long long _j_u128 "unsigned __int128"
    ctypedef long long _j_i128 "__int128"


cdef bint _j_whole_number(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    # the text is one number by the json module's grammar, nothing around it
    cdef JParse sub
    cdef const uint8_t* t
    cdef Py_ssize_t m
    cdef bint integral
    if n == 0:
        return False
    sub.p = s
    sub.end = s + n
    return _j_number(&sub, &t, &m, &integral) == J_OK and m == n


cdef int _j_decimal(const uint8_t* s, Py_ssize_t n, const JSpec* sp, uint8_t* out) noexcept nogil:
    # a number's text (the json module's grammar, checked) as DECIMAL(precision, scale), as
    # the Python reader gives it: refused (deferred) with more integer digits than the type
    # holds, rounded half-up to the scale, refused when rounding passes the precision
    cdef Py_ssize_t i = 0, first = -1, last = -1, frac = 0, k, ndig, keep
    cdef int64_t e = 0, exp10, adjusted, shift
    cdef int esign = 1, j
    cdef bint neg = s[0] == 45
    cdef bint point = False
    cdef _j_u128 u = 0, limit = 1
    cdef _j_i128 v
    cdef const uint8_t* digits
    if neg:
        i = 1
    # the coefficient's digits: those of the integer and fraction parts, the point skipped
    while i < n and (48 <= s[i] <= 57 or s[i] == 46):
        if s[i] == 46:
            point = True
        else:
            if point:
                frac += 1
            if first < 0 and s[i] != 48:
                first = i
            last = i
        i += 1
    if i < n:
        i += 1                  # e or E
        if s[i] == 45 or s[i] == 43:
            esign = -1 if s[i] == 45 else 1
            i += 1
        while i < n:
            if e > 100000:
                return J_DEFER
            e = e * 10 + (s[i] - 48)
            i += 1
    for j in range(sp.precision):
        limit *= 10
    if first < 0:
        memset(out, 0, 16)      # zero, whatever its exponent
        return J_OK
    exp10 = esign * e - frac
    # the significant digits run from first to last (the point, if any, between them)
    ndig = 0
    for k in range(first, last + 1):
        if s[k] != 46:
            ndig += 1
    adjusted = ndig - 1 + exp10
    if adjusted >= sp.precision - sp.scale:
        return J_DEFER
    shift = exp10 + sp.scale
    keep = ndig + shift if shift < 0 else ndig
    j = 0
    for k in range(first, last + 1):
        if s[k] == 46:
            continue
        if j < keep:
            u = u * 10 + (s[k] - 48)
        elif j == keep:
            if s[k] >= 53:      # half-up: the first digit dropped decides
                u += 1
        j += 1
    if shift > 0:
        for j in range(shift):
            u *= 10
    if u >= limit:
        return J_DEFER
    v = <_j_i128>u
    if neg:
        v = -v
    memcpy(out, &v, 16)
    return J_OK


# ------------------------------------------------------------------ values

cdef int _j_skip(JParse* st) noexcept nogil:
    cdef int b = _jpeek(st)
    cdef const uint8_t* s
    cdef Py_ssize_t n
    cdef bint integral
    cdef int close, open_
    if b == 34:
        st.p += 1
        return _j_skip_string(st)
    if b == 123 or b == 91:
        if st.depth >= _J_MAX_DEPTH:
            return J_DEFER
        st.depth += 1
        open_ = b
        close = b + 2
        st.p += 1
        _j_ws(st)
        if _jpeek(st) == close:
            st.p += 1
            st.depth -= 1
            return J_OK
        while True:
            if b == 123:
                # a key, then its value
                if _jpeek(st) != 34:
                    return J_DEFER
                st.p += 1
                if _j_skip_string(st):
                    return J_DEFER
                _j_ws(st)
                if _jpeek(st) != 58:
                    return J_DEFER
                st.p += 1
                _j_ws(st)
            if _j_skip(st):
                return J_DEFER
            _j_ws(st)
            b = _jpeek(st)
            st.p += 1
            if b == close:
                st.depth -= 1
                return J_OK
            if b != 44:
                return J_DEFER
            _j_ws(st)
            b = open_
    if b == 116:
        return J_OK if _j_lit(st, "true", 4) else J_DEFER
    if b == 102:
        return J_OK if _j_lit(st, "false", 5) else J_DEFER
    if b == 110:
        return J_OK if _j_lit(st, "null", 4) else J_DEFER
    if b == 78:
        return J_OK if _j_lit(st, "NaN", 3) else J_DEFER
    if b == 73:
        return J_OK if _j_lit(st, "Infinity", 8) else J_DEFER
    if b == 45 and _jpeek_at(st, 1) == 73:
        return J_OK if _j_lit(st, "-Infinity", 9) else J_DEFER
    return _j_number(st, &s, &n, &integral)


cdef int _j_key_escaped(JParse* st, uint8_t* out, Py_ssize_t* n) noexcept nogil:
    # a key with escapes (p at its first byte) decoded into out, p left at its closing quote;
    # a long one or one with a lone surrogate is left to the Python reader
    cdef Py_ssize_t k = 0
    cdef Py_ssize_t wrote
    cdef int b
    while True:
        b = _jpeek(st)
        if b == 34:
            n[0] = k
            return J_OK
        if b < 32 or k > _J_KEY_MAX:
            return J_DEFER
        st.p += 1
        if b == 92:
            if _j_escape(st, out + k, &wrote):
                return J_DEFER
            k += wrote
        else:
            out[k] = <uint8_t>b
            k += 1


cdef int _j_struct(JParse* st, int c) noexcept nogil:
    # an object (p at "{") into struct column c: known fields converted, others checked and
    # passed over, missing ones null; a key met twice is left to the Python reader
    cdef const JSpec* sp = &st.specs[c]
    cdef JCol* col = &st.cols[c]
    cdef uint8_t* seen = st.seen + sp.fstart
    cdef const JField* fd
    cdef const uint8_t* key
    cdef Py_ssize_t klen
    cdef uint32_t slot
    cdef int32_t f
    cdef int b, r
    cdef int expect = 0
    cdef uint8_t keybuf[_J_KEY_MAX + 4]
    cdef const uint8_t* key_end
    if st.depth >= _J_MAX_DEPTH:
        return J_DEFER
    st.depth += 1
    r = _j_room(st, c)
    if r:
        return r
    memset(seen, 0, sp.nfields)
    st.p += 1
    _j_ws(st)
    b = _jpeek(st)
    if b == 125:
        st.p += 1
    else:
        while True:
            if b != 34:
                return J_DEFER
            st.p += 1
            key = st.p
            _j_plain(st)
            b = _jpeek(st)
            if b == 92:
                # a key with escapes: decoded into keybuf, then looked up as any other
                st.p = key
                if _j_key_escaped(st, keybuf, &klen):
                    return J_DEFER
                key = keybuf
                key_end = keybuf + _J_KEY_MAX + 4
            elif b != 34:
                return J_DEFER             # the end, or a control character
            else:
                klen = st.p - key
                key_end = st.end
            st.p += 1
            # keys that are not UTF-8 (or hold escapes) are checked: such a key matches no field
            # only if the Python reader's U+FFFD replacement cannot make it one
            if (b == 92 or _j_has_high(key, klen)) and not pyx_utf8_valid(key, klen):
                return J_DEFER
            _j_ws(st)
            if _jpeek(st) != 58:
                return J_DEFER
            st.p += 1
            _j_ws(st)
            # keys mostly come in the schema's order: the field after the last one met is tried
            # first, the hash table then
            f = -1
            if expect < sp.nfields:
                fd = &st.fields[sp.fstart + expect]
                if fd.name_len == klen and _j_key_is(st.names + fd.name_at, key, klen, key_end):
                    f = sp.fstart + expect
            if f < 0:
                slot = _j_hash(key, klen) & sp.tmask
                while True:
                    f = st.table[sp.tstart + slot]
                    if f < 0:
                        break
                    fd = &st.fields[f]
                    if fd.name_len == klen and _j_key_is(st.names + fd.name_at, key, klen, key_end):
                        break
                    slot = (slot + 1) & sp.tmask
            if f >= 0:
                expect = f - sp.fstart + 1
            if f >= 0:
                if seen[f - sp.fstart]:
                    return J_DEFER
                seen[f - sp.fstart] = 1
                r = _j_value(st, st.fields[f].col)
            else:
                r = _j_skip(st)
            if r:
                return r
            _j_ws(st)
            b = _jpeek(st)
            st.p += 1
            if b == 125:
                break
            if b != 44:
                return J_DEFER
            _j_ws(st)
            b = _jpeek(st)
    for f in range(sp.nfields):
        if not seen[f]:
            r = _j_null(st, st.fields[sp.fstart + f].col)
            if r:
                return r
    _j_valid(col)
    col.n += 1
    st.depth -= 1
    return J_OK


cdef int _j_list(JParse* st, int c) noexcept nogil:
    # an array (p at "[") into list column c
    cdef const JSpec* sp = &st.specs[c]
    cdef JCol* col
    cdef int b, r
    if st.depth >= _J_MAX_DEPTH:
        return J_DEFER
    st.depth += 1
    st.p += 1
    _j_ws(st)
    if _jpeek(st) == 93:
        st.p += 1
    else:
        while True:
            r = _j_value(st, sp.child)
            if r:
                return r
            _j_ws(st)
            b = _jpeek(st)
            st.p += 1
            if b == 93:
                break
            if b != 44:
                return J_DEFER
            _j_ws(st)
    r = _j_room(st, c)
    if r:
        return r
    col = &st.cols[c]
    if st.cols[sp.child].n >= 0x7fffffff:
        return J_BIG
    _j_valid(col)
    (<int32_t*>col.data)[col.n + 1] = <int32_t>st.cols[sp.child].n
    col.n += 1
    st.depth -= 1
    return J_OK


cdef int _j_map(JParse* st, int c) noexcept nogil:
    # an object (p at "{") into MAP<STRING, V> column c: each key and value an entry, in the
    # text's order; a key met twice (and a map of more than _J_MAP_CHECKED entries, whose keys
    # are not compared) is left to the Python reader
    cdef const JSpec* sp = &st.specs[c]
    cdef int entries = sp.child
    cdef int kc = st.fields[st.specs[entries].fstart].col
    cdef int vc = st.fields[st.specs[entries].fstart + 1].col
    cdef JCol* keys = &st.cols[kc]
    cdef JCol* ent
    cdef JCol* col
    cdef Py_ssize_t first = keys.n, a, b2
    cdef const int32_t* offs
    cdef int b, r
    if st.depth >= _J_MAX_DEPTH:
        return J_DEFER
    st.depth += 1
    st.p += 1
    _j_ws(st)
    if _jpeek(st) == 125:
        st.p += 1
    else:
        while True:
            if _jpeek(st) != 34:
                return J_DEFER
            r = _j_value(st, kc)          # a string column: _j_string
            if r:
                return r
            _j_ws(st)
            if _jpeek(st) != 58:
                return J_DEFER
            st.p += 1
            _j_ws(st)
            r = _j_value(st, vc)
            if r:
                return r
            r = _j_room(st, entries)
            if r:
                return r
            ent = &st.cols[entries]
            _j_valid(ent)
            ent.n += 1
            _j_ws(st)
            b = _jpeek(st)
            st.p += 1
            if b == 125:
                break
            if b != 44:
                return J_DEFER
            _j_ws(st)
    # repeated keys: the Python reader's dict keeps the first place and the last value
    keys = &st.cols[kc]
    if keys.n - first > _J_MAP_CHECKED:
        return J_DEFER
    offs = <const int32_t*>keys.data
    for a in range(first, keys.n):
        for b2 in range(a + 1, keys.n):
            if (offs[a + 1] - offs[a] == offs[b2 + 1] - offs[b2]
                    and memcmp(keys.bytes + offs[a], keys.bytes + offs[b2], offs[a + 1] - offs[a]) == 0):
                return J_DEFER
    r = _j_room(st, c)
    if r:
        return r
    col = &st.cols[c]
    _j_valid(col)
    (<int32_t*>col.data)[col.n + 1] = <int32_t>st.cols[entries].n
    col.n += 1
    st.depth -= 1
    return J_OK


cdef int _j_value(JParse* st, int c) noexcept nogil:
    cdef const JSpec* sp = &st.specs[c]
    cdef JCol* col = &st.cols[c]
    cdef int kind = sp.kind
    cdef int b = _jpeek(st)
    cdef int r
    cdef const uint8_t* s
    cdef Py_ssize_t n
    cdef bint integral
    cdef int64_t v
    cdef int32_t day
    cdef double x
    if b == 110:
        return _j_null(st, c) if _j_lit(st, "null", 4) else J_DEFER
    if kind == JK_STRUCT:
        return _j_struct(st, c) if b == 123 else J_DEFER
    if kind == JK_LIST:
        return _j_list(st, c) if b == 91 else J_DEFER
    if kind == JK_MAP:
        return _j_map(st, c) if b == 123 else J_DEFER
    if kind == JK_STR:
        if b == 34:
            return _j_string(st, c)
        return _j_text(st, c, b)
    if kind == JK_BIN:
        return _j_base64(st, c) if b == 34 else J_DEFER
    if col.n + 1 >= col.cap:
        r = _j_grow(col, sp, col.n + 2, 0)
        if r:
            return r
    if kind == JK_BOOL:
        if b == 116 and _j_lit(st, "true", 4):
            col.data[col.n >> 3] |= <uint8_t>(1 << (col.n & 7))
        elif b == 102 and _j_lit(st, "false", 5):
            col.data[col.n >> 3] &= <uint8_t>~(1 << (col.n & 7))
        else:
            return J_DEFER
    elif kind == JK_F32 or kind == JK_F64:
        if _j_float(st, kind == JK_F32, &x):
            return J_DEFER
        if kind == JK_F64:
            (<double*>col.data)[col.n] = x
        else:
            (<float*>col.data)[col.n] = <float>x
    elif kind == JK_DEC:
        # a number, or a string holding exactly one (other text is the Python reader's)
        if b == 34:
            if _j_raw_text(st, &s, &n) or not _j_whole_number(s, n):
                return J_DEFER
        elif (b != 45 and not 48 <= b <= 57) or _j_number(st, &s, &n, &integral):
            return J_DEFER
        if _j_decimal(s, n, sp, col.data + col.n * 16):
            return J_DEFER
    elif kind == JK_DATE:
        if b != 34 or _j_raw_text(st, &s, &n) or _j_date_text(s, n, &day):
            return J_DEFER
        (<int32_t*>col.data)[col.n] = day
    elif kind == JK_TS or kind == JK_TSN:
        if b == 34:
            if _j_raw_text(st, &s, &n) or _j_timestamp_text(s, n, kind == JK_TS, &v):
                return J_DEFER
        elif kind == JK_TSN:
            return J_DEFER      # a number is no TIMESTAMP_NTZ: the Python reader's bad row
        else:
            # integer seconds since the epoch
            if (b != 45 and not 48 <= b <= 57) or _j_number(st, &s, &n, &integral) or not integral:
                return J_DEFER
            if _j_integer(s, n, 64, &v) or not _J_SECONDS_MIN <= v <= _J_SECONDS_MAX:
                return J_DEFER
            v *= 1000000
        (<int64_t*>col.data)[col.n] = v
    else:
        # the integers: integral numbers in range only
        if (b != 45 and not 48 <= b <= 57) or _j_number(st, &s, &n, &integral) or not integral:
            return J_DEFER
        if _j_integer(s, n, sp.width * 8, &v):
            return J_DEFER
        if kind == JK_I64:
            (<int64_t*>col.data)[col.n] = v
        elif kind == JK_I32:
            (<int32_t*>col.data)[col.n] = <int32_t>v
        elif kind == JK_I16:
            (<int16_t*>col.data)[col.n] = <int16_t>v
        else:
            (<int8_t*>col.data)[col.n] = <int8_t>v
    _j_valid(col)
    col.n += 1
    return J_OK


# ------------------------------------------------------------------ rows

cdef int _j_row(JParse* st, const uint8_t* p, const uint8_t* end) noexcept nogil:
    # one value: J_OK (a row, or a null row for a blank value), or why not
    st.p = p
    st.end = end
    st.depth = 0
    _j_ws(st)
    if st.p == end:
        return _j_null(st, 0)      # empty or blank: a null row, no error
    if _jpeek(st) != 123:
        return J_DEFER             # not an object, or other leading space: the Python reader's
    # the text after the object is ignored, as Spark reads only the first value
    return _j_struct(st, 0)


cdef inline void _j_snap(JParse* st, int ncols) noexcept nogil:
    cdef int k
    for k in range(ncols):
        st.cols[k].snap_n = st.cols[k].n
        st.cols[k].snap_used = st.cols[k].used
        st.cols[k].snap_nulls = st.cols[k].nulls


cdef inline void _j_rollback(JParse* st, int ncols) noexcept nogil:
    cdef int k
    for k in range(ncols):
        st.cols[k].n = st.cols[k].snap_n
        st.cols[k].used = st.cols[k].snap_used
        st.cols[k].nulls = st.cols[k].snap_nulls


cdef object _j_buffer(uint8_t** p, Py_ssize_t n, Py_ssize_t cap):
    # the first n bytes of a column's block as a pa.Buffer that owns the block (*p is NULL
    # after: the decode frees what it still holds); a block much larger than n is cut first
    cdef _CBuf owner = _CBuf()
    cdef void* q
    if p[0] == NULL or n == 0:
        return pa.py_buffer(b"")
    if cap - n > (64 << 10):
        q = realloc(p[0], n)
        if q != NULL:
            p[0] = <uint8_t*>q
            cap = n
    owner.ptr = p[0]
    owner.cap = cap
    owner.size = n
    p[0] = NULL
    return pa.py_buffer(owner)


cdef object _j_array(const JSpec* specs, JCol* cols, const JField* fields, int c, object arrow_type):
    # column c (and its children) as a pyarrow array of arrow_type
    cdef const JSpec* sp = &specs[c]
    cdef JCol* col = &cols[c]
    cdef Py_ssize_t n = col.n
    cdef int f
    if n & 7:
        col.valid[n >> 3] &= <uint8_t>((1 << (n & 7)) - 1)
    validity = _j_buffer(&col.valid, (n + 7) >> 3, col.cap // 8 + 8) if col.nulls else None
    if sp.kind == JK_STRUCT:
        children = [_j_array(specs, cols, fields, fields[f].col, arrow_type[f - sp.fstart].type)
                    for f in range(sp.fstart, sp.fstart + sp.nfields)]
        return pa.StructArray.from_buffers(arrow_type, n, [validity], null_count=col.nulls,
                                           children=children)
    if sp.kind == JK_MAP:
        entries_type = pa.struct([arrow_type.key_field, arrow_type.item_field])
        entries = _j_array(specs, cols, fields, sp.child, entries_type)
        return pa.Array.from_buffers(arrow_type, n, [validity, _j_buffer(&col.data, (n + 1) * 4, (col.cap + 1) * 4)],
                                     null_count=col.nulls, children=[entries])
    if sp.kind == JK_LIST:
        if n == 0:
            (<int32_t*>col.data)[0] = 0
        item = _j_array(specs, cols, fields, sp.child, arrow_type.value_type)
        return pa.Array.from_buffers(arrow_type, n, [validity, _j_buffer(&col.data, (n + 1) * 4, (col.cap + 1) * 4)],
                                     null_count=col.nulls, children=[item])
    if sp.kind == JK_STR or sp.kind == JK_BIN:
        if n == 0:
            (<int32_t*>col.data)[0] = 0
        return pa.Array.from_buffers(arrow_type, n, [validity, _j_buffer(&col.data, (n + 1) * 4, (col.cap + 1) * 4),
                                                     _j_buffer(&col.bytes, col.used, col.bcap)],
                                     null_count=col.nulls)
    if sp.kind == JK_BOOL:
        return pa.Array.from_buffers(arrow_type, n, [validity, _j_buffer(&col.data, (n + 7) >> 3, col.cap // 8 + 8)],
                                     null_count=col.nulls)
    return pa.Array.from_buffers(arrow_type, n, [validity, _j_buffer(&col.data, n * sp.width, col.cap * sp.width)],
                                 null_count=col.nulls)


def json_decode(JsonProgram program, values):
    """JSON values (a binary or string array with int32 offsets) -> (struct array of the
    program's type, rows deferred to the Python reader). A null value is a null row; a
    deferred row is null in the array. Raises MemoryError, or ValueError when a column would
    pass 2 GiB (Arrow's int32 offsets)."""
    if not (pa.types.is_binary(values.type) or pa.types.is_string(values.type)):
        raise TypeError(f"json_decode takes a binary or string array, not {values.type}")
    cdef Py_ssize_t n = len(values)
    cdef Py_ssize_t base = values.offset
    bufs = values.buffers()
    cdef const uint8_t* vbits = _av_address(bufs[0])
    cdef const int32_t* offs = <const int32_t*>_av_address(bufs[1])
    cdef const uint8_t* data = _av_data(bufs[2])
    cdef JParse st
    cdef int ncols = program.ncols
    cdef Py_ssize_t i, k, ndeferred = 0
    cdef int r = J_OK
    cdef JCol* cols = <JCol*>malloc(ncols * sizeof(JCol))
    cdef uint8_t* seen = <uint8_t*>malloc(program.nfields + 1)
    cdef uint8_t* deferred = <uint8_t*>malloc(n + 1)
    if cols == NULL or seen == NULL or deferred == NULL:
        free(cols)
        free(seen)
        free(deferred)
        raise MemoryError()
    memset(cols, 0, ncols * sizeof(JCol))
    memset(deferred, 0, n + 1)
    st.specs = <const JSpec*><char*>program._specs
    st.fields = <const JField*><char*>program._fields
    st.table = <const int32_t*><char*>program._table
    st.names = <const uint8_t*><char*>program._names
    st.cols = cols
    st.seen = seen
    try:
        with nogil:
            # every column starts with its first offset, and room for a row's worth
            for k in range(ncols):
                r = _j_grow(&cols[k], &st.specs[k], n + 2 if k == 0 else 16, 0)
                if r:
                    break
                if (st.specs[k].kind == JK_LIST or st.specs[k].kind == JK_STR or st.specs[k].kind == JK_MAP
                        or st.specs[k].kind == JK_BIN):
                    (<int32_t*>cols[k].data)[0] = 0
            i = 0
            while r == J_OK and i < n:
                _j_snap(&st, ncols)
                if vbits != NULL and not (vbits[(base + i) >> 3] >> ((base + i) & 7)) & 1:
                    r = _j_null(&st, 0)
                else:
                    r = _j_row(&st, data + offs[base + i], data + offs[base + i + 1])
                    if r == J_DEFER:
                        _j_rollback(&st, ncols)
                        deferred[i] = 1
                        ndeferred += 1
                        r = _j_null(&st, 0)
                i += 1
        if r == J_NOMEM:
            raise MemoryError()
        if r == J_BIG:
            raise ValueError("a JSON column would pass 2**31 entries or bytes (Arrow's int32 "
                             "offsets): decode fewer values at a time")
        array = _j_array(st.specs, cols, st.fields, 0, program.arrow_type)
        rows = [k for k in range(n) if deferred[k]] if ndeferred else []
        return array, rows
    finally:
        for k in range(ncols):
            free(cols[k].valid)
            free(cols[k].data)
            free(cols[k].bytes)
        free(cols)
        free(seen)
        free(deferred)
