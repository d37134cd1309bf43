# --------------------------------------------------------------------------- Avro values

from libc.stdint cimport INT32_MAX, INT64_MIN, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from cpython.exc cimport PyErr_Fetch, PyErr_NormalizeException, PyErr_Restore
from cpython.ref cimport Py_XDECREF
from libc.string cimport memcmp, memcpy, memset

cdef extern from *:
    """
    /* A big-endian two's complement integer of n bytes as a 16-byte little-endian decimal128,
     * 0 if it fits; 1 if it needs more than 128 bits; 2 if |value| >= 10**precision. */
    static int av_dec128(const uint8_t *p, Py_ssize_t n, int precision, uint8_t *out) {
        __int128 v = 0, lim = 1;
        unsigned __int128 u;
        Py_ssize_t i, k = 0;
        uint8_t sign = (n > 0 && (p[0] & 0x80)) ? 0xFF : 0x00;
        if (n > 16) {
            for (k = 0; k < n - 16; k++) if (p[k] != sign) return 1;
            if (((p[k] ^ sign) & 0x80) != 0) return 1;
        }
        u = sign ? ~(unsigned __int128)0 : 0;
        for (i = k; i < n; i++) u = (u << 8) | p[i];
        v = (__int128)u;
        for (i = 0; i < precision; i++) lim *= 10;
        if (v >= lim || v <= -lim) return 2;
        memcpy(out, &v, 16);
        return 0;
    }
    """
    int av_dec128(const uint8_t* p, Py_ssize_t n, int precision, uint8_t* out) noexcept nogil
    # a * b into out; true if it overflows (one multiply: a division per value cost ~10%)
    bint av_mul_overflow "__builtin_mul_overflow" (int64_t a, int64_t b,
                                                   int64_t* out) noexcept nogil

cdef enum:
    # a value may hold at most this many items that take no bytes (arrays of null): a count
    # is otherwise bounded by the bytes left, this bounds the work a hostile count can ask for
    AV_ZERO_LIMIT = 1 << 20
    # bodies (array items, union branches, defaults) nest at most this deep: the schema's
    # depth for a compiled program; a C stack a forged program cannot exhaust
    AV_DEPTH_LIMIT = 1000

# the row function without exception checks: a reader fault (-1, an exception set) is
# turned into a row error by the caller instead of propagating
ctypedef int (*av_row_t)(AvState* st, Reader* r, Py_ssize_t pc, Py_ssize_t end) noexcept nogil


cdef int _av_col(tuple kinds, Py_ssize_t pc, int64_t k, int want=-1) except -1:
    if not 0 <= k < len(kinds) or (want >= 0 and kinds[k] != want):
        raise ValueError(f"instruction {pc}: column {k} is not one it can write")
    return 0


cdef int _av_within(Py_ssize_t pc, int64_t lo, int64_t n, int64_t size, str what) except -1:
    if lo < 0 or n < 0 or lo > size or n > size - lo:
        raise ValueError(f"instruction {pc}: {what} [{lo}, +{n}) out of range")
    return 0


@cython.final
cdef class AvroProgram:
    """A compiled Avro (writer, reader) program, pinned for the decoder (see
    pyconsumer.values.avro.Program: code and aux are int64 arrays, native order). Checked
    whole here: every column, table, blob range and jump in bounds, bodies strictly after
    their instruction (so a run ends), a column's kind what its instructions write; a
    program that is not is a ValueError, never a read or write out of bounds."""

    def __init__(self, code, aux, bytes blob, kinds, children, widths, reasons=()):
        self._code = bytes(memoryview(code).cast("B"))
        self._aux = bytes(memoryview(aux).cast("B"))
        self._blob = blob
        if len(self._code) % 32 or len(self._aux) % 8:
            raise ValueError("code is 4 int64 per instruction, aux int64")
        self.kinds = tuple(int(k) for k in kinds)
        self.children = tuple(int(c) for c in children)
        self.widths = tuple(int(w) for w in widths)
        self.reasons = tuple(str(x) for x in reasons)
        if not (len(self.kinds) == len(self.children) == len(self.widths)) or not self.kinds:
            raise ValueError("one kind, child and width per column")
        self.prog.code = <const int64_t*><const char*>self._code
        self.prog.ncode = len(self._code) // 32
        self.prog.aux = <const int64_t*><const char*>self._aux
        self.prog.blob = <const uint8_t*><const char*>self._blob
        self.prog.blob_len = len(self._blob)
        self._check()
        # the columns a null at the root writes to are those with one entry a row
        start, count = self.prog.aux[0], self.prog.aux[1]
        root = {self.prog.aux[start + j] for j in range(count)}
        self.aligned = tuple(k in root for k in range(len(self.kinds)))
        if not self.aligned[0]:
            raise ValueError("the root's null list must hold the root")

    cdef int _check(self) except -1:
        cdef Py_ssize_t ncols = len(self.kinds), naux = len(self._aux) // 8
        cdef Py_ssize_t ncode = self.prog.ncode, nblob = self.prog.blob_len, pc, j
        cdef const int64_t* aux = self.prog.aux
        cdef const int64_t* ins
        cdef int64_t op, a, b, c, start, count
        width_of = {AV_K_I32: 4, AV_K_I64: 8, AV_K_F32: 4, AV_K_F64: 8, AV_K_DEC: 16}
        for k in range(ncols):
            kind = self.kinds[k]
            if not AV_K_NULL <= kind <= AV_K_LIST or self.widths[k] != width_of.get(kind, 0):
                raise ValueError(f"column {k}: kind {kind} with width {self.widths[k]}")
            if kind == AV_K_LIST and not 0 <= self.children[k] < ncols:
                raise ValueError(f"column {k}: a list's child {self.children[k]} is no column")
            if kind != AV_K_LIST and self.children[k] != -1:
                raise ValueError(f"column {k}: only a list names a child")
        if naux < 2 * ncols:
            raise ValueError("aux opens with a (start, count) null list per column")
        for k in range(ncols):
            start, count = aux[2 * k], aux[2 * k + 1]
            if start < 0 or count < 1 or start + count > naux:
                raise ValueError(f"column {k}: null list out of aux")
            for j in range(count):
                if not 0 <= aux[start + j] < ncols:
                    raise ValueError(f"column {k}: null list names no column")

        targets = {0: AV_K_I32, 1: AV_K_I64, 2: AV_K_F32, 3: AV_K_F64}
        for pc in range(ncode):
            ins = self.prog.code + 4 * pc
            op, a, b, c = ins[0], ins[1], ins[2], ins[3]
            if op == AV_NULLS:
                _av_col(self.kinds, pc, a)
            elif op == AV_STRUCT:
                _av_col(self.kinds, pc, a, AV_K_STRUCT)
            elif op == AV_NULLTYPE:
                _av_col(self.kinds, pc, a, AV_K_NULL)
            elif op == AV_BOOL:
                _av_col(self.kinds, pc, a, AV_K_BOOL)
            elif op == AV_INT or op == AV_LONG or op == AV_FLOAT:
                if b not in targets or c < 1 or (op == AV_FLOAT and b < 2):
                    raise ValueError(f"instruction {pc}: bad target {b} or multiplier {c}")
                _av_col(self.kinds, pc, a, targets[b])
            elif op == AV_DOUBLE:
                _av_col(self.kinds, pc, a, AV_K_F64)
            elif op == AV_BYTES:
                _av_col(self.kinds, pc, a, AV_K_BIN)
            elif op == AV_FIXED:
                _av_col(self.kinds, pc, a, AV_K_BIN)
                _av_within(pc, 0, b, 1 << 31, "fixed size")
            elif op == AV_DEC_BYTES:
                _av_col(self.kinds, pc, a, AV_K_DEC)
                _av_within(pc, 0, b, 38, "precision")
            elif op == AV_DEC_FIXED:
                _av_col(self.kinds, pc, a, AV_K_DEC)
                _av_within(pc, 0, b, 1 << 31, "fixed size")
                _av_within(pc, 0, c, 38, "precision")
            elif op == AV_ENUM:
                _av_col(self.kinds, pc, a, AV_K_BIN)
                _av_within(pc, b, 2 * c, naux, "enum table")
                for j in range(c):
                    if aux[b + 2 * j] >= 0:
                        _av_within(pc, aux[b + 2 * j], aux[b + 2 * j + 1], nblob, "enum symbol")
            elif op == AV_ARRAY:
                if a != -1:
                    _av_col(self.kinds, pc, a, AV_K_LIST)
                _av_within(pc, pc + 1, b, ncode, "array body")
                if c < 0:
                    raise ValueError(f"instruction {pc}: negative item size")
            elif op == AV_UNION:
                _av_within(pc, b, 2 * a, naux, "union table")
                if not pc < c <= ncode:
                    raise ValueError(f"instruction {pc}: union end {c} out of range")
                for j in range(a):
                    _av_within(pc, aux[b + 2 * j], aux[b + 2 * j + 1], c, "union branch")
                    if aux[b + 2 * j] <= pc:
                        raise ValueError(f"instruction {pc}: a union branch before the union")
            elif op == AV_DEFAULT:
                _av_within(pc, a, b, nblob, "default")
                _av_within(pc, pc + 1, c, ncode, "default body")
            elif op == AV_SKIP_N:
                _av_within(pc, 0, a, 1 << 62, "skip")
            elif op not in (AV_FAIL, AV_SKIP_VARINT, AV_SKIP_BYTES):
                raise ValueError(f"instruction {pc}: unknown opcode {op}")
        return 0


# --------------------------------------------------------------------------- appends

cdef inline int av_room(AvState* st, int col, int in_bytes, Py_ssize_t need) noexcept nogil:
    st.err = AV_E_ROOM
    st.grow_col = col
    st.grow_bytes = in_bytes
    st.grow_need = need
    return -2


cdef inline int av_fail(AvState* st, int err, int64_t a, int64_t b, Py_ssize_t pos) noexcept nogil:
    st.err = err
    st.ea = a
    st.eb = b
    st.epos = pos
    return -2


cdef inline void av_bit(uint8_t* bits, Py_ssize_t i, bint v) noexcept nogil:
    if v:
        bits[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bits[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef inline void av_null_at(AvCol* c) noexcept nogil:
    """Append a null to one column that has room (a null column only counts it)."""
    if c.kind != AV_K_NULL:
        av_bit(c.valid, c.n, False)
        if c.kind == AV_K_BIN:
            (<int32_t*>c.data)[c.n + 1] = <int32_t>c.used
        elif c.kind == AV_K_LIST:
            (<int32_t*>c.data)[c.n + 1] = (<int32_t*>c.data)[c.n]
        elif c.kind == AV_K_BOOL:
            av_bit(c.data, c.n, False)
        elif c.width:
            memset(c.data + c.n * c.width, 0, c.width)
    c.n += 1


cdef int av_nulls(AvState* st, int col) noexcept nogil:
    """A null at col, and at each struct child of it (struct children stay row-aligned)."""
    cdef AvCol* c
    cdef int m
    cdef Py_ssize_t j, start, count
    # the null list of col sits at the start of aux: (start, count) pairs, one per column
    start = <Py_ssize_t>st.aux[2 * col]
    count = <Py_ssize_t>st.aux[2 * col + 1]
    for j in range(count):            # room first: all the nulls are written, or none
        m = <int>st.aux[start + j]
        c = &st.cols[m]
        if c.kind != AV_K_NULL and c.n >= c.cap:
            return av_room(st, m, 0, c.n + 1)
    for j in range(count):
        av_null_at(&st.cols[<int>st.aux[start + j]])
    return 0


cdef inline int av_long(AvState* st, Reader* r, int64_t* out) except -1 nogil:
    """An Avro long: a zig-zag varint of at most 10 bytes whose value fits 64 bits."""
    cdef uint64_t u
    cdef Py_ssize_t at = r.pos
    rd_uvarint(r, &u, 10)
    if r.pos - at == 10 and r.buf[r.pos - 1] > 1:
        return av_fail(st, AV_E_RANGE, 64, 0, at)
    out[0] = <int64_t>((u >> 1) ^ ((<uint64_t>0) - (u & 1)))
    return 0


cdef inline int av_int(AvState* st, Reader* r, int64_t* out) except -1 nogil:
    """An Avro int: a zig-zag varint of at most 5 bytes whose value fits 32 bits."""
    cdef uint64_t u
    cdef uint32_t v
    cdef Py_ssize_t at = r.pos
    rd_uvarint(r, &u, 5)
    if u > <uint64_t>0xFFFFFFFFU:
        return av_fail(st, AV_E_RANGE, 32, 0, at)
    v = <uint32_t>u
    out[0] = <int32_t>((v >> 1) ^ ((<uint32_t>0) - (v & 1)))
    return 0


cdef inline int av_number(AvState* st, AvCol* c, int col, int target, int64_t mul,
                          int64_t v, Py_ssize_t at) noexcept nogil:
    cdef int64_t scaled
    if c.n >= c.cap:
        return av_room(st, col, 0, c.n + 1)
    if target == 0:
        (<int32_t*>c.data)[c.n] = <int32_t>v
    elif target == 1:
        if mul != 1 and av_mul_overflow(v, mul, &scaled):
            return av_fail(st, AV_E_OVERFLOW, v, 0, at)
        elif mul != 1:
            v = scaled
        (<int64_t*>c.data)[c.n] = v
    elif target == 2:
        (<float*>c.data)[c.n] = <float>v
    else:
        (<double*>c.data)[c.n] = <double>v
    av_bit(c.valid, c.n, True)
    c.n += 1
    return 0


cdef inline int av_put_bytes(AvState* st, AvCol* c, int col, const uint8_t* p,
                             Py_ssize_t n) noexcept nogil:
    if c.n >= c.cap:
        return av_room(st, col, 0, c.n + 1)
    if c.used + n > c.bcap:
        return av_room(st, col, 1, c.used + n)
    if n:
        pyx_copy(c.bytes + c.used, p, n)
    c.used += n
    (<int32_t*>c.data)[c.n + 1] = <int32_t>c.used
    av_bit(c.valid, c.n, True)
    c.n += 1
    return 0


# --------------------------------------------------------------------------- the interpreter

cdef int av_run(AvState* st, Reader* r, Py_ssize_t pc, Py_ssize_t end) except -1 nogil:
    """Run instructions [pc, end) over r: 0, -2 (a row error or AV_E_ROOM in st), or -1 (a
    reader fault, an exception set)."""
    cdef const int64_t* ins
    cdef const int64_t* t
    cdef AvCol* c
    cdef int64_t op, v, count, size
    cdef int64_t a, b, cc
    cdef uint64_t u
    cdef Py_ssize_t at, start, stop, left
    cdef const uint8_t* p
    cdef uint8_t bt
    cdef float f
    cdef double d
    cdef Reader sub
    cdef int rc
    while pc < end:
        ins = st.code + 4 * pc
        op = ins[0]
        a = ins[1]
        b = ins[2]
        cc = ins[3]
        at = r.pos
        if op == AV_INT:
            av_int(st, r, &v)
            if st.err:
                return -2
            if av_number(st, &st.cols[a], <int>a, <int>b, cc, v, at):
                return -2
        elif op == AV_LONG:
            av_long(st, r, &v)
            if st.err:
                return -2
            if av_number(st, &st.cols[a], <int>a, <int>b, cc, v, at):
                return -2
        elif op == AV_BYTES:
            av_long(st, r, &v)
            if st.err:
                return -2
            p = rd_bytes(r, <Py_ssize_t>v)
            if b and not pyx_utf8_valid(p, <size_t>v):
                return av_fail(st, AV_E_UTF8, 0, 0, at)
            if av_put_bytes(st, &st.cols[a], <int>a, p, <Py_ssize_t>v):
                return -2
        elif op == AV_DOUBLE or op == AV_FLOAT:
            c = &st.cols[a]
            if c.n >= c.cap:
                return av_room(st, <int>a, 0, c.n + 1)
            if op == AV_DOUBLE:
                p = rd_bytes(r, 8)
                memcpy(&d, p, 8)                  # Avro is little-endian, like the hosts
                (<double*>c.data)[c.n] = d
            else:
                p = rd_bytes(r, 4)
                memcpy(&f, p, 4)
                if b == 2:
                    (<float*>c.data)[c.n] = f
                else:
                    (<double*>c.data)[c.n] = <double>f
            av_bit(c.valid, c.n, True)
            c.n += 1
        elif op == AV_BOOL:
            c = &st.cols[a]
            if c.n >= c.cap:
                return av_room(st, <int>a, 0, c.n + 1)
            p = rd_bytes(r, 1)
            if p[0] > 1:
                return av_fail(st, AV_E_BOOL, p[0], 0, at)
            av_bit(c.data, c.n, p[0] == 1)
            av_bit(c.valid, c.n, True)
            c.n += 1
        elif op == AV_STRUCT:
            c = &st.cols[a]
            if c.n >= c.cap:
                return av_room(st, <int>a, 0, c.n + 1)
            av_bit(c.valid, c.n, True)
            c.n += 1
        elif op == AV_NULLS:
            if av_nulls(st, <int>a):
                return -2
        elif op == AV_NULLTYPE:
            st.cols[a].n += 1
        elif op == AV_UNION:
            av_long(st, r, &v)
            if st.err:
                return -2
            if v < 0 or v >= a:
                return av_fail(st, AV_E_UNION, v, a, at)
            t = st.aux + b + 2 * v
            if st.depth >= AV_DEPTH_LIMIT:
                return av_fail(st, AV_E_DEPTH, AV_DEPTH_LIMIT, 0, at)
            st.depth += 1
            rc = av_run(st, r, <Py_ssize_t>t[0], <Py_ssize_t>(t[0] + t[1]))
            st.depth -= 1
            if rc:
                return rc
            pc = <Py_ssize_t>cc
            continue
        elif op == AV_ARRAY:
            start = pc + 1
            stop = start + <Py_ssize_t>b
            while True:
                at = r.pos
                av_long(st, r, &count)
                if st.err:
                    return -2
                if count == 0:
                    break
                if count < 0:
                    if count == INT64_MIN:
                        return av_fail(st, AV_E_COUNT, count, rd_left(r), at)
                    count = -count
                    av_long(st, r, &size)          # the block's bytes: not needed to read it
                    if st.err:
                        return -2
                    if size < 0:
                        return av_fail(st, AV_E_BLOCK, size, 0, at)
                left = rd_left(r)
                if cc > 0:
                    if count > left // cc:
                        return av_fail(st, AV_E_COUNT, count, left, at)
                else:
                    st.zero_items += count
                    if st.zero_items > AV_ZERO_LIMIT:
                        return av_fail(st, AV_E_ZERO, AV_ZERO_LIMIT, 0, at)
                if st.depth >= AV_DEPTH_LIMIT:
                    return av_fail(st, AV_E_DEPTH, AV_DEPTH_LIMIT, 0, at)
                st.depth += 1
                while count > 0:
                    rc = av_run(st, r, start, stop)
                    if rc:
                        return rc
                    count -= 1
                st.depth -= 1
            if a >= 0:
                c = &st.cols[a]
                if c.n >= c.cap:
                    return av_room(st, <int>a, 0, c.n + 1)
                if st.cols[c.child].n > INT32_MAX:   # (null items have no buffer to fill)
                    return av_room(st, c.child, 0, st.cols[c.child].n)
                (<int32_t*>c.data)[c.n + 1] = <int32_t>st.cols[c.child].n
                av_bit(c.valid, c.n, True)
                c.n += 1
            pc = stop
            continue
        elif op == AV_ENUM:
            av_int(st, r, &v)
            if st.err:
                return -2
            if v < 0 or v >= cc:
                return av_fail(st, AV_E_ENUM, v, cc, at)
            t = st.aux + b + 2 * v
            if t[0] < 0:
                return av_fail(st, AV_E_FAIL, t[1], 0, at)
            if av_put_bytes(st, &st.cols[a], <int>a, st.blob + t[0], <Py_ssize_t>t[1]):
                return -2
        elif op == AV_FIXED:
            p = rd_bytes(r, <Py_ssize_t>b)
            if av_put_bytes(st, &st.cols[a], <int>a, p, <Py_ssize_t>b):
                return -2
        elif op == AV_DEC_BYTES or op == AV_DEC_FIXED:
            c = &st.cols[a]
            if c.n >= c.cap:
                return av_room(st, <int>a, 0, c.n + 1)
            if op == AV_DEC_BYTES:
                av_long(st, r, &v)
                if st.err:
                    return -2
                size = v
                cc = b                              # precision
            else:
                size = b
            p = rd_bytes(r, <Py_ssize_t>size)
            rc = av_dec128(p, <Py_ssize_t>size, <int>cc, c.data + 16 * c.n)
            if rc:
                return av_fail(st, AV_E_DECIMAL, size, rc, at)
            av_bit(c.valid, c.n, True)
            c.n += 1
        elif op == AV_DEFAULT:
            rd_init(&sub, st.blob + a, <Py_ssize_t>b, r.where, r.offset)
            if st.depth >= AV_DEPTH_LIMIT:
                return av_fail(st, AV_E_DEPTH, AV_DEPTH_LIMIT, 0, at)
            st.depth += 1
            rc = av_run(st, &sub, pc + 1, pc + 1 + <Py_ssize_t>cc)
            st.depth -= 1
            if rc:
                return rc
            pc += 1 + <Py_ssize_t>cc
            continue
        elif op == AV_FAIL:
            return av_fail(st, AV_E_FAIL, a, 0, at)
        elif op == AV_SKIP_VARINT:
            rd_uvarint(r, &u, 10)
        elif op == AV_SKIP_N:
            rd_skip(r, <Py_ssize_t>a)
        elif op == AV_SKIP_BYTES:
            av_long(st, r, &v)
            if st.err:
                return -2
            rd_skip(r, <Py_ssize_t>v)
        pc += 1
    return 0


# --------------------------------------------------------------------------- the columns

@cython.final
cdef class _AvColumns:
    """The output columns of one decode: AvCol structs over _PBuf blocks."""

    def __cinit__(self, tuple kinds, tuple children, tuple widths, tuple aligned,
                  Py_ssize_t rows, Py_ssize_t data_bytes):
        # the layout of the columns (kinds, list children, widths, one entry a row): the first
        # program's, an Avro or a Protobuf one
        cdef int k
        cdef AvCol* c
        self.ncols = len(kinds)
        self.cols = <AvCol*>malloc(self.ncols * sizeof(AvCol))
        if self.cols == NULL:
            raise MemoryError()
        memset(self.cols, 0, self.ncols * sizeof(AvCol))
        self.valid, self.data, self.bytes_ = [], [], []
        cdef Py_ssize_t nbin = 0
        if rows < 16:
            rows = 16
        for k in range(self.ncols):
            if kinds[k] == AV_K_BIN and aligned[k]:
                nbin += 1
        for k in range(self.ncols):
            c = &self.cols[k]
            c.kind = kinds[k]
            c.child = children[k]
            c.width = widths[k]
            c.aligned = aligned[k]
            self.valid.append(None)
            self.data.append(None)
            self.bytes_.append(None)
            if c.kind == AV_K_NULL:
                continue
            # aligned columns have one entry a row; their strings share the input's bytes
            # (twice a fair share: growing a big buffer copies it); columns inside lists
            # start small and grow
            self._grow(k, 0, rows if c.aligned else 16)
            if c.kind == AV_K_BIN:
                self._grow(k, 1, (2 * data_bytes // (nbin + 1) + 64) if c.aligned else 64)
        # offsets start at 0
        for k in range(self.ncols):
            c = &self.cols[k]
            if c.kind == AV_K_BIN or c.kind == AV_K_LIST:
                (<int32_t*>c.data)[0] = 0

    def __dealloc__(self):
        free(self.cols)

    cdef int _grow(self, int k, int in_bytes, Py_ssize_t need) except -1:
        cdef AvCol* c = &self.cols[k]
        cdef _PBuf buf
        cdef Py_ssize_t cap
        if need > INT32_MAX:
            raise ValueError("an Avro column would pass 2**31 entries or bytes (Arrow's int32 "
                             "offsets): decode fewer values at a time")
        if in_bytes:
            cap = c.bcap * 2
            if cap < need:
                cap = need
            if cap > INT32_MAX:
                cap = INT32_MAX
            buf = self.bytes_[k]
            if buf is None:
                buf = _PBuf(cap)
                self.bytes_[k] = buf
            buf.ensure(cap)
            c.bytes = buf.ptr
            c.bcap = cap
            return 0
        cap = c.cap * 2
        if cap < need:
            cap = need
        for which in range(2):
            lst = self.valid if which == 0 else self.data
            if which == 0:
                nbytes = cap // 8 + 1
            elif c.kind == AV_K_BOOL:
                nbytes = cap // 8 + 1
            elif c.kind == AV_K_BIN or c.kind == AV_K_LIST:
                nbytes = (cap + 1) * 4
            else:
                nbytes = cap * c.width
            if nbytes == 0:
                continue
            buf = lst[k]
            if buf is None:
                buf = _PBuf(nbytes)
                lst[k] = buf
            buf.ensure(nbytes)
            if which == 0:
                c.valid = buf.ptr
            else:
                c.data = buf.ptr
        c.cap = cap
        return 0

    cdef list finish(self):
        """Per column: (entries, validity, values or offsets, data) as pa.Buffer or None."""
        cdef AvCol* c
        cdef int k
        out = []
        for k in range(self.ncols):
            c = &self.cols[k]
            if c.kind == AV_K_NULL:
                out.append((c.n, None, None, None))
                continue
            vb = (<_PBuf>self.valid[k]).finish(c.n // 8 + 1)
            if c.kind == AV_K_STRUCT:
                db = None
            elif c.kind == AV_K_BOOL:
                db = (<_PBuf>self.data[k]).finish(c.n // 8 + 1)
            elif c.kind == AV_K_BIN or c.kind == AV_K_LIST:
                db = (<_PBuf>self.data[k]).finish((c.n + 1) * 4)
            else:
                db = (<_PBuf>self.data[k]).finish(c.n * c.width)
            bb = (<_PBuf>self.bytes_[k]).finish(c.used) if c.kind == AV_K_BIN else None
            out.append((c.n, vb, db, bb))
        return out


cdef inline const uint8_t* _av_address(object buf):
    return <const uint8_t*><uintptr_t>buf.address if buf is not None else NULL


cdef inline const uint8_t* _av_data(object buf):
    # a binary array of empty values may have no data buffer; readers need a pointer
    return <const uint8_t*><uintptr_t>buf.address if buf is not None else <const uint8_t*>""


# --------------------------------------------------------------------------- a decode's arguments
# (the column decoders' entries, Avro's and Protobuf's, take the same shapes)

cdef object _decode_programs(list programs, type cls, str name, str layout):
    """The first compiled program of ``programs`` (entries of ``cls``, or str reasons), having
    checked that every program shares its column layout (``layout`` names it in the error)."""
    first = None
    for entry in programs:
        if isinstance(entry, cls):
            if first is None:
                first = entry
            elif (entry.kinds != first.kinds or entry.children != first.children
                  or entry.aligned != first.aligned):
                raise ValueError(f"the programs of one decode must share {layout}")
        elif not isinstance(entry, str):
            raise TypeError(f"a program or a reason, got {type(entry).__name__}")
    if first is None:
        raise ValueError(f"{name} needs at least one compiled program")
    return first


cdef list _binary_buffers(object values, str name):
    """The (validity, offsets, data) buffers of a pa.BinaryArray."""
    bufs = values.buffers()
    if len(bufs) != 3:
        raise TypeError(f"{name} takes a pa.BinaryArray")
    return bufs


cdef bytes _per_row(object arg, Py_ssize_t n, Py_ssize_t width, str what):
    """``arg`` (bytes-like) as bytes of ``width`` bytes a row for ``n`` rows (the caller keeps
    the bytes alive while it reads them)."""
    cdef bytes keep = arg if type(arg) is bytes else bytes(memoryview(arg).cast("B"))
    if len(keep) != width * n:
        raise ValueError(f"{what}: one {'int32' if width == 4 else 'uint8'} per value")
    return keep


cdef int* _nested_columns(_AvColumns cols, Py_ssize_t* count) except NULL:
    """The columns not aligned with the rows (a list's items, below): a malloc'd array the
    caller frees, their number in ``count``."""
    cdef int* nested = <int*>malloc((cols.ncols + 1) * sizeof(int))
    cdef Py_ssize_t k
    if nested == NULL:
        raise MemoryError()
    count[0] = 0
    for k in range(cols.ncols):
        if not cols.cols[k].aligned:
            nested[count[0]] = <int>k
            count[0] += 1
    return nested


cdef inline uint64_t _av_key_hash(const _AvKey* k) noexcept nogil:
    cdef uint64_t h = <uint64_t>k.id
    cdef int j
    if k.id < 0:
        for j in range(16):
            h = h * 31 + k.guid[j]
    return h * <uint64_t>0x9E3779B97F4A7C15ULL


cdef int _av_key_slot(_AvKey** keys, Py_ssize_t* nk, Py_ssize_t* kcap, int32_t** table,
                      Py_ssize_t* tcap, const _AvKey* k) noexcept nogil:
    """The index of key k among the distinct keys (added if new): open addressing, so that
    a batch of many distinct ids costs no more than a few; -1 when out of memory."""
    cdef uint64_t h
    cdef Py_ssize_t at, j, mask
    cdef int32_t* nt
    cdef _AvKey* nkeys
    cdef int32_t e
    if 2 * (nk[0] + 1) > tcap[0]:             # keep the table at most half full
        nt = <int32_t*>malloc(2 * tcap[0] * sizeof(int32_t))
        if nt == NULL:
            return -1
        memset(nt, 0, 2 * tcap[0] * sizeof(int32_t))
        mask = 2 * tcap[0] - 1
        for j in range(nk[0]):
            at = <Py_ssize_t>(_av_key_hash(&keys[0][j]) >> 20) & mask
            while nt[at]:
                at = (at + 1) & mask
            nt[at] = <int32_t>(j + 1)
        free(table[0])
        table[0] = nt
        tcap[0] *= 2
    mask = tcap[0] - 1
    at = <Py_ssize_t>(_av_key_hash(k) >> 20) & mask
    while True:
        e = table[0][at]
        if e == 0:
            break
        if keys[0][e - 1].id == k.id and (k.id >= 0 or
                                          memcmp(keys[0][e - 1].guid, k.guid, 16) == 0):
            return e - 1
        at = (at + 1) & mask
    if nk[0] == kcap[0]:
        nkeys = <_AvKey*>realloc(keys[0], 2 * kcap[0] * sizeof(_AvKey))
        if nkeys == NULL:
            return -1
        keys[0] = nkeys
        kcap[0] *= 2
    keys[0][nk[0]] = k[0]
    table[0][at] = <int32_t>(nk[0] + 1)
    nk[0] += 1
    return <int>(nk[0] - 1)


def avro_frame_scan(values):
    """The Confluent prefix of each value of a pa.BinaryArray: (slots, skips, keys). slots:
    int32 per row, an index into keys (schema ids as int, GUIDs as 16 bytes), -1 for a null
    value, -AV_E_HEADER for a value shorter than its header, -AV_E_MAGIC for a magic byte
    that is neither 0 nor 1; skips: uint8 per row, the header's bytes (5 or 17)."""
    cdef Py_ssize_t n = len(values), i, nk = 0, kcap = 16, tcap = 64
    cdef Py_ssize_t off0 = values.offset
    bufs = values.buffers()
    cdef const uint8_t* vbits = _av_address(bufs[0])
    cdef const int32_t* offs = <const int32_t*>_av_address(bufs[1])
    cdef const uint8_t* data = _av_data(bufs[2])
    slots_b = bytearray(4 * n)
    skips_b = bytearray(n)
    cdef int32_t* slots = <int32_t*><char*>slots_b if n else NULL
    cdef uint8_t* skips = <uint8_t*><char*>skips_b if n else NULL
    cdef const uint8_t* p
    cdef Py_ssize_t len_
    cdef _AvKey key
    cdef int slot = 0, last = -1
    cdef bint failed = False
    cdef _AvKey* keys = <_AvKey*>malloc(kcap * sizeof(_AvKey))
    cdef int32_t* table = <int32_t*>malloc(tcap * sizeof(int32_t))
    try:
        if keys == NULL or table == NULL:
            raise MemoryError()
        memset(table, 0, tcap * sizeof(int32_t))
        memset(&key, 0, sizeof(_AvKey))
        with nogil:
            for i in range(n):
                if vbits != NULL and not (vbits[(i + off0) >> 3] >> ((i + off0) & 7)) & 1:
                    slots[i] = -1
                    continue
                p = data + offs[i + off0]
                len_ = offs[i + off0 + 1] - offs[i + off0]
                if len_ < 1 or (p[0] == 0 and len_ < 5) or (p[0] == 1 and len_ < 17):
                    slots[i] = -AV_E_HEADER
                    continue
                if p[0] == 0:
                    key.id = pyx_be32(p + 1)
                    skips[i] = 5
                    # the common case: the id of the row before
                    if last >= 0 and keys[last].id == key.id:
                        slots[i] = last
                        continue
                elif p[0] == 1:
                    key.id = -1
                    memcpy(key.guid, p + 1, 16)
                    skips[i] = 17
                else:
                    slots[i] = -AV_E_MAGIC
                    continue
                slot = _av_key_slot(&keys, &nk, &kcap, &table, &tcap, &key)
                if slot < 0:
                    failed = True
                    break
                slots[i] = slot
                last = slot
        if failed:
            raise MemoryError()
        out_keys = [keys[i].id if keys[i].id >= 0 else
                    bytes((<const char*>keys[i].guid)[:16]) for i in range(nk)]
    finally:
        free(keys)
        free(table)
    return bytes(slots_b), bytes(skips_b), out_keys


def avro_decode(values, list programs, slots=None, skips=None, Py_ssize_t skip=0):
    """Decode the Avro values of a pa.BinaryArray with the programs (all of one reader
    schema). A row runs programs[slots[i]] (slots: int32 per row, None: all 0) from byte
    skips[i] (uint8 per row; None: ``skip``); an entry of programs that is a str is the
    reason of a row error for the rows of that slot. Returns (columns, errors): per column
    (entries, validity, values or offsets, data) buffers, and [(row, reason)]."""
    cdef Py_ssize_t n = len(values), i, off0 = values.offset, nprog = len(programs), k
    cdef Py_ssize_t start, length, sk, data_bytes
    cdef int32_t slot
    cdef AvroProgram first = _decode_programs(programs, AvroProgram, "avro_decode",
                                              "the reader schema")
    bufs = _binary_buffers(values, "avro_decode")
    cdef const uint8_t* vbits = _av_address(bufs[0])
    cdef const int32_t* offs = <const int32_t*>_av_address(bufs[1])
    cdef const uint8_t* data = _av_data(bufs[2])
    cdef const int32_t* slot_of = NULL
    cdef const uint8_t* skip_of = NULL
    if slots is not None:
        slots_keep = _per_row(slots, n, 4, "slots")
        slot_of = <const int32_t*><const char*>slots_keep
    if skips is not None:
        skips_keep = _per_row(skips, n, 1, "skips")
        skip_of = <const uint8_t*><const char*>skips_keep
    data_bytes = (offs[off0 + n] - offs[off0]) if n else 0
    cols = _AvColumns(first.kinds, first.children, first.widths, first.aligned, n, data_bytes)
    cdef AvProg* progs = <AvProg*>malloc((nprog if nprog else 1) * sizeof(AvProg))
    if progs == NULL:
        raise MemoryError()
    for k in range(nprog):
        if isinstance(programs[k], AvroProgram):
            progs[k] = (<AvroProgram>programs[k]).prog
        else:
            progs[k].code = NULL
    cdef AvState st
    cdef Py_ssize_t root_n = 0, nnested = 0
    cdef int* nested = _nested_columns(cols, &nnested)
    cdef Reader r
    cdef Where where
    cdef int rc = 0, fault
    cdef bint pending_null = False      # the row is done (bad or null) but its null needs room
    cdef AvCol* c
    cdef av_row_t row_fn = <av_row_t>av_run
    errors = []
    where.topic = NULL
    where.partition = -1
    where.origin = 0
    where.inflated = False
    st.cols = cols.cols
    st.ncols = cols.ncols
    st.code = first.prog.code
    st.aux = first.prog.aux   # the null lists open every aux alike (one reader schema)
    st.blob = first.prog.blob
    slot = 0
    sk = 0
    i = 0
    try:
        while i < n:
            with nogil:
                while i < n:
                    st.err = 0
                    st.epos = -1
                    st.zero_items = 0
                    st.depth = 0
                    rc = 0
                    if vbits != NULL and not (vbits[(i + off0) >> 3] >> ((i + off0) & 7)) & 1:
                        if av_nulls(&st, 0):      # a tombstone: a null value, not an error
                            pending_null = True
                            break
                        i += 1
                        continue
                    slot = slot_of[i] if slot_of != NULL else 0
                    sk = skip_of[i] if skip_of != NULL else skip
                    start = offs[i + off0]
                    length = offs[i + off0 + 1] - start
                    # a row adds one entry to the root and to each column aligned with it,
                    # so only the columns inside lists need their counts kept to roll back
                    root_n = st.cols[0].n
                    for k in range(nnested):
                        c = &st.cols[nested[k]]
                        c.snap_n = c.n
                        c.snap_used = c.used
                    if slot == -1:
                        if av_nulls(&st, 0):
                            pending_null = True
                            break
                        i += 1
                        continue
                    if slot < 0:
                        av_fail(&st, -slot, length if slot == -AV_E_HEADER else
                                (data[start] if length else 0), 0, -1)
                        rc = -2
                    elif slot >= nprog or progs[slot].code == NULL:
                        av_fail(&st, AV_E_UNKNOWN, slot, 0, -1)
                        rc = -2
                    elif sk > length:
                        av_fail(&st, AV_E_HEADER, length, 0, -1)
                        rc = -2
                    else:
                        st.code = progs[slot].code
                        st.aux = progs[slot].aux
                        st.blob = progs[slot].blob
                        rd_init(&r, data + start + sk, length - sk, &where, i)
                        rc = row_fn(&st, &r, 0, progs[slot].ncode)
                        if rc == 0 and r.pos != r.end:
                            av_fail(&st, AV_E_TRAILING, r.end - r.pos, 0, r.pos)
                            rc = -2
                        if rc == -2 and st.epos >= 0:
                            st.epos += sk
                    if rc == 0:
                        i += 1
                        continue
                    for k in range(st.ncols):         # roll the row back
                        c = &st.cols[k]
                        if c.aligned:
                            c.n = root_n
                            if c.kind == AV_K_BIN:
                                c.used = (<int32_t*>c.data)[root_n]
                        else:
                            c.n = c.snap_n
                            c.used = c.snap_used
                    if rc == -1 or st.err == AV_E_ROOM:
                        break                         # needs the GIL: below
                    with gil:
                        errors.append((i, _av_reason(&st, programs, slot)))
                    if av_nulls(&st, 0):
                        pending_null = True
                        break
                    i += 1
            if i >= n:
                break
            if rc == -1:
                # a reader fault: the row is bad, the pending exception says how
                fault = _av_fault()
                errors.append((i, _av_fault_reason(fault, r.pos + sk)))
                pending_null = True
            elif st.err == AV_E_ROOM:
                # grow the column; an unfinished row runs again from its start (its partial
                # entries were rolled back), a finished one gets its null
                cols._grow(st.grow_col, st.grow_bytes, st.grow_need)
            if pending_null:
                st.err = 0
                while av_nulls(&st, 0):
                    cols._grow(st.grow_col, st.grow_bytes, st.grow_need)
                    st.err = 0
                pending_null = False
                i += 1
    finally:
        free(progs)
        free(nested)
    return cols.finish(), errors


cdef int _av_fault() except -1:
    """The pending exception of a reader fault as 1 truncated, 2 bad varint, 3 negative
    length, cleared; any other exception (MemoryError, ...) propagates."""
    cdef PyObject* t = NULL
    cdef PyObject* v = NULL
    cdef PyObject* tb = NULL
    PyErr_Fetch(&t, &v, &tb)
    if t == NULL:
        raise SystemError("an Avro row failed without an exception")
    PyErr_NormalizeException(&t, &v, &tb)
    exc = <object>v if v != NULL else None
    if CorruptRecordError is _ErrorClassesNotSet or not isinstance(exc, CorruptRecordError):
        PyErr_Restore(t, v, tb)                 # not a reader fault: it goes on
        return -1
    Py_XDECREF(t)
    Py_XDECREF(v)
    Py_XDECREF(tb)
    reason = str(getattr(exc, "reason", exc))
    if reason.startswith("Malformed varint"):
        return 2
    if reason.startswith("Invalid length"):
        return 3
    return 1


cdef str _av_fault_reason(int fault, Py_ssize_t pos):
    if fault == 2:
        return f"bad varint (over 10 bytes) at byte {pos}"
    if fault == 3:
        return f"negative length at byte {pos}"
    return f"truncated value at byte {pos}"


cdef str _av_reason(AvState* st, list programs, Py_ssize_t slot):
    cdef int e = st.err
    cdef int64_t a = st.ea, b = st.eb
    where = f" at byte {st.epos}" if st.epos >= 0 else ""
    if e == AV_E_UNION:
        return f"union index {a} out of range ({b} branches){where}"
    if e == AV_E_UTF8:
        return f"invalid UTF-8 in a string{where}"
    if e == AV_E_FAIL:
        prog = programs[slot] if 0 <= slot < len(programs) else None
        if isinstance(prog, AvroProgram) and 0 <= a < len(prog.reasons):
            return prog.reasons[a] + where
        return f"schema resolution error {a}{where}"
    if e == AV_E_ENUM:
        return f"enum index {a} out of range ({b} symbols){where}"
    if e == AV_E_COUNT:
        return f"array or map block of {a} items cannot fit the {b} bytes left{where}"
    if e == AV_E_RANGE:
        return f"varint out of the {a}-bit range{where}"
    if e == AV_E_BOOL:
        return f"boolean byte {a} is neither 0 nor 1{where}"
    if e == AV_E_TRAILING:
        return f"{a} trailing bytes after the value{where}"
    if e == AV_E_OVERFLOW:
        return f"timestamp {a} ms out of range in microseconds{where}"
    if e == AV_E_DECIMAL:
        return (f"decimal of {a} bytes " + ("needs over 128 bits" if b == 1 else
                                             "exceeds its precision") + where)
    if e == AV_E_HEADER:
        return f"value of {a} bytes is shorter than its Confluent header"
    if e == AV_E_MAGIC:
        return f"bad magic byte 0x{a:02x} (Confluent framing has 0x00 or 0x01)"
    if e == AV_E_UNKNOWN:
        p = programs[a] if 0 <= a < len(programs) else None
        return p if isinstance(p, str) else f"no program for slot {a}"
    if e == AV_E_BLOCK:
        return f"negative block size {a}{where}"
    if e == AV_E_ZERO:
        return f"over {a} items that take no bytes in one value{where}"
    if e == AV_E_DEPTH:
        return f"bodies nested over {a} deep{where}"
    return f"Avro decode error {e}{where}"
