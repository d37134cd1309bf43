# --------------------------------------------------------------------------- Protobuf values

cdef extern from "stdio.h" nogil:
    int snprintf(char* buf, size_t n, const char* fmt, ...)

cdef extern from *:
    """
    /* the 10**6 multiply of a Timestamp's seconds and the add of its microseconds, checked */
    static int pb_add_overflow(int64_t a, int64_t b, int64_t *out) {
        return __builtin_add_overflow(a, b, out);
    }
    """
    bint pb_add_overflow(int64_t a, int64_t b, int64_t* out) noexcept nogil

cdef enum:
    # messages and groups nest at most this deep in one value (protobuf's own parse limit)
    PB_DEPTH_LIMIT = 100
    # a message-index array names at most this many levels
    PB_INDEX_LIMIT = 64


@cython.final
cdef class ProtobufProgram:
    """A compiled message (see pyconsumer.values.protobuf.Program: nodes, fields and aux are
    int64 arrays, native order), pinned for the decoder. Checked whole here: every column,
    node, table and blob range in bounds and of the kind its fields write, so a forged
    program is a ValueError, never a read or write out of bounds."""

    def __init__(self, nodes, fields, aux, bytes blob, kinds, children, widths, names=(),
                 bint emit_defaults=False):
        self._nodes = bytes(memoryview(nodes).cast("B"))
        self._fields = bytes(memoryview(fields).cast("B"))
        self._aux = bytes(memoryview(aux).cast("B"))
        self._blob = blob
        if len(self._nodes) % (8 * PB_NODE_WORDS) or len(self._fields) % (8 * PB_FIELD_WORDS) \
                or len(self._aux) % 8 or not self._nodes:
            raise ValueError("nodes, fields and aux are whole int64 records, one node at least")
        self.nnodes = len(self._nodes) // (8 * PB_NODE_WORDS)
        self.nfields = len(self._fields) // (8 * PB_FIELD_WORDS)
        self.naux = len(self._aux) // 8
        self.kinds = tuple(int(k) for k in kinds)
        self.children = tuple(int(c) for c in children)
        self.widths = tuple(int(w) for w in widths)
        self.names = tuple(str(x) for x in names)
        self.emit_defaults = emit_defaults
        if not (len(self.kinds) == len(self.children) == len(self.widths)) or not self.kinds:
            raise ValueError("one kind, child and width per column")
        self._check()
        cdef const int64_t* table = <const int64_t*><const char*>self._aux
        root = {table[table[0] + j] for j in range(table[1])}
        self.aligned = tuple(k in root for k in range(len(self.kinds)))

    cdef int _check(self) except -1:
        cdef const int64_t* nodes = <const int64_t*><const char*>self._nodes
        cdef const int64_t* fields = <const int64_t*><const char*>self._fields
        cdef const int64_t* aux = <const int64_t*><const char*>self._aux
        cdef const int64_t* nd
        cdef const int64_t* f
        cdef Py_ssize_t ncols = len(self.kinds), i, j, k, nblob = len(self._blob)
        width_of = {AV_K_I32: 4, AV_K_I64: 8, AV_K_F32: 4, AV_K_F64: 8, AV_K_DEC: 16}
        for k in range(ncols):
            kind = self.kinds[k]
            if not AV_K_NULL <= kind <= AV_K_LIST or self.widths[k] != width_of.get(kind, 0):
                raise ValueError(f"column {k}: kind {kind} with width {self.widths[k]}")
            if (kind == AV_K_LIST) != (self.children[k] != -1) or not -1 <= self.children[k] < ncols:
                raise ValueError(f"column {k}: only a list names a child, in range")
        if self.naux < 2 * ncols:
            raise ValueError("aux opens with a (start, count) null list per column")
        for k in range(ncols):
            if aux[2 * k] < 0 or aux[2 * k + 1] < 1 or aux[2 * k] + aux[2 * k + 1] > self.naux:
                raise ValueError(f"column {k}: null list out of aux")
            for j in range(aux[2 * k + 1]):
                if not 0 <= aux[aux[2 * k] + j] < ncols:
                    raise ValueError(f"column {k}: null list names no column")
        if self.kinds[nodes[0]] != AV_K_STRUCT or nodes[0] != 0:
            raise ValueError("node 0 writes the root struct, column 0")
        for i in range(self.nnodes):
            nd = nodes + PB_NODE_WORDS * i
            if not 0 <= nd[0] < ncols or self.kinds[nd[0]] != AV_K_STRUCT:
                raise ValueError(f"node {i}: column {nd[0]} is no struct")
            if nd[1] < 0 or nd[2] < 0 or nd[1] + nd[2] > self.nfields or nd[5] < 0:
                raise ValueError(f"node {i}: fields out of range")
            if nd[3] < 0 or nd[4] < 0 or nd[3] + nd[4] > self.naux:
                raise ValueError(f"node {i}: field table out of aux")
            for j in range(nd[4]):
                if not -1 <= aux[nd[3] + j] < nd[2]:
                    raise ValueError(f"node {i}: field table names no field")
            for j in range(nd[2]):
                f = fields + PB_FIELD_WORDS * (nd[1] + j)
                self._check_field(f, nd, i, nd[1] + j)
        return 0

    cdef int _check_field(self, const int64_t* f, const int64_t* nd, Py_ssize_t node,
                                 Py_ssize_t fi) except -1:
        cdef Py_ssize_t ncols = len(self.kinds), col = f[3], item
        cdef int64_t mode = f[2], target = f[5], flags = f[6]
        want = {PB_T_I32: AV_K_I32, PB_T_I64: AV_K_I64, PB_T_F32: AV_K_F32, PB_T_F64: AV_K_F64,
                PB_T_BOOL: AV_K_BOOL, PB_T_STR: AV_K_BIN, PB_T_BIN: AV_K_BIN, PB_T_DEC: AV_K_DEC,
                PB_T_ENUM_STR: AV_K_BIN, PB_T_ENUM_INT: AV_K_I32, PB_T_U32_I64: AV_K_I64}
        if not PB_M_SCALAR <= mode <= PB_M_DUMMY or not 1 <= f[1] <= 18 or not 0 <= f[14] <= 5:
            raise ValueError(f"field {fi}: bad mode, type or wire type")
        if mode == PB_M_SKIP:
            return 0
        if not 0 <= col < ncols:
            raise ValueError(f"field {fi}: column {col} out of range")
        item = col
        if flags & PB_F_REPEATED or mode == PB_M_MAP:
            if self.kinds[col] != AV_K_LIST:
                raise ValueError(f"field {fi}: a repeated field writes a list column")
            item = self.children[col]
        if f[7] < -1 or f[7] >= nd[5]:
            raise ValueError(f"field {fi}: oneof {f[7]} out of range")
        if mode == PB_M_MESSAGE or mode == PB_M_MAP:
            if not node < f[4] < self.nnodes:
                raise ValueError(f"field {fi}: node {f[4]} is not after its own")
            sub = <const int64_t*><const char*>self._nodes + PB_NODE_WORDS * f[4]
            if sub[0] != item:
                raise ValueError(f"field {fi}: node {f[4]} writes another column")
            if mode == PB_M_MAP and (sub[6] & PB_NODE_MAP_ENTRY) == 0:
                raise ValueError(f"field {fi}: a map's node is a map entry")
        elif mode == PB_M_TIME:
            if self.kinds[item] != AV_K_I64:
                raise ValueError(f"field {fi}: a time writes an int64 column")
        else:
            if target not in want or self.kinds[item] != want[target]:
                raise ValueError(f"field {fi}: target {target} cannot write column {item}")
        if target == PB_T_ENUM_STR or target == PB_T_ENUM_INT:
            if f[8] < 0 or f[9] < 0 or f[8] + 3 * f[9] > self.naux:
                raise ValueError(f"field {fi}: enum table out of aux")
            for j in range(f[9]):
                if not (0 <= aux_at(self._aux, f[8] + 3 * j + 1)
                        and 0 <= aux_at(self._aux, f[8] + 3 * j + 2)
                        and aux_at(self._aux, f[8] + 3 * j + 1) + aux_at(self._aux, f[8] + 3 * j + 2)
                        <= len(self._blob)):
                    raise ValueError(f"field {fi}: enum name out of the blob")
            if f[12] < 0 or f[13] < 0 or f[12] + f[13] > len(self._blob) or f[13] > 200:
                raise ValueError(f"field {fi}: enum prefix out of the blob")
        if target == PB_T_STR or target == PB_T_BIN:
            if f[10] < 0 or f[11] < 0 or f[10] + f[11] > len(self._blob):
                raise ValueError(f"field {fi}: default out of the blob")
        return 0


cdef inline int64_t aux_at(bytes aux, Py_ssize_t i):
    return (<const int64_t*><const char*>aux)[i]


# --------------------------------------------------------------------------- reads and writes

cdef inline int pb_varint(PbState* st, Reader* r, uint64_t* out) except -1 nogil:
    st.at = r.pos
    return rd_uvarint(r, out, 10)


cdef inline const uint8_t* pb_bytes(PbState* st, Reader* r, Py_ssize_t n) except NULL nogil:
    st.at = r.pos
    return rd_bytes(r, n)


cdef inline int pb_fail(PbState* st, int err, int64_t a, int64_t b, Py_ssize_t pos) noexcept nogil:
    st.err = err
    st.ea = a
    st.eb = b
    st.epos = pos
    return -2


cdef inline int pb_room(PbState* st, int col, int in_bytes, Py_ssize_t need) noexcept nogil:
    st.err = PB_E_ROOM
    st.grow_col = col
    st.grow_bytes = in_bytes
    st.grow_need = need
    return -2


cdef int pb_nulls(PbState* st, int col) noexcept nogil:
    """A null at col and at each struct child of it (its null list opens aux)."""
    cdef Py_ssize_t j, start = <Py_ssize_t>st.aux[2 * col], count = <Py_ssize_t>st.aux[2 * col + 1]
    cdef AvCol* c
    cdef int m
    for j in range(count):
        m = <int>st.aux[start + j]
        c = &st.cols[m]
        if c.kind != AV_K_NULL and c.n >= c.cap:
            return pb_room(st, m, 0, c.n + 1)
    for j in range(count):
        av_null_at(&st.cols[<int>st.aux[start + j]])
    return 0


cdef inline int pb_put_bytes(PbState* st, int col, const uint8_t* p, Py_ssize_t n,
                             const uint8_t* p2, Py_ssize_t n2) noexcept nogil:
    cdef AvCol* c = &st.cols[col]
    if c.n >= c.cap:
        return pb_room(st, col, 0, c.n + 1)
    if c.used + n + n2 > c.bcap:
        return pb_room(st, col, 1, c.used + n + n2)
    if n:
        pyx_copy(c.bytes + c.used, p, n)
    if n2:
        pyx_copy(c.bytes + c.used + n, p2, n2)
    c.used += n + n2
    (<int32_t*>c.data)[c.n + 1] = <int32_t>c.used
    av_bit(c.valid, c.n, True)
    c.n += 1
    return 0


cdef inline int pb_put_num(PbState* st, int col, int64_t target, int64_t x) noexcept nogil:
    """A number in its column: x is the int64 the value converts to (float bits for floats)."""
    cdef AvCol* c = &st.cols[col]
    cdef uint32_t b32
    cdef uint64_t b64
    cdef float f
    cdef double d
    if c.n >= c.cap:
        return pb_room(st, col, 0, c.n + 1)
    if target == PB_T_I32 or target == PB_T_ENUM_INT:
        (<int32_t*>c.data)[c.n] = <int32_t>x
    elif target == PB_T_I64:
        (<int64_t*>c.data)[c.n] = x
    elif target == PB_T_U32_I64:
        (<int64_t*>c.data)[c.n] = <int64_t>(<uint32_t>x)
    elif target == PB_T_F32:
        b32 = <uint32_t>x
        memcpy(&f, &b32, 4)
        (<float*>c.data)[c.n] = f
    elif target == PB_T_F64:
        b64 = <uint64_t>x
        memcpy(&d, &b64, 8)
        (<double*>c.data)[c.n] = d
    elif target == PB_T_BOOL:
        av_bit(c.data, c.n, x != 0)
    elif target == PB_T_DEC:
        b64 = <uint64_t>x                   # little-endian decimal128: the low word, then 0
        memcpy(c.data + 16 * c.n, &b64, 8)
        memset(c.data + 16 * c.n + 8, 0, 8)
    av_bit(c.valid, c.n, True)
    c.n += 1
    return 0


cdef inline int64_t pb_convert(int64_t vtype, uint64_t v) noexcept nogil:
    """A scalar's raw wire value (varint, or the fixed bytes as a little-endian integer) as
    the int64 its column takes: 32-bit types truncated and sign- or zero-extended, zig-zag
    undone, booleans 0 or 1, float bits as they are."""
    cdef uint32_t u
    if vtype == 5 or vtype == 14 or vtype == 15:        # int32, enum, sfixed32
        return <int64_t><int32_t><uint32_t>v
    if vtype == 13 or vtype == 7 or vtype == 2:         # uint32, fixed32, float
        return <int64_t><uint32_t>v
    if vtype == 17:                                     # sint32
        u = <uint32_t>v
        return <int64_t><int32_t>((u >> 1) ^ ((<uint32_t>0) - (u & 1)))
    if vtype == 18:                                     # sint64
        return <int64_t>((v >> 1) ^ ((<uint64_t>0) - (v & 1)))
    if vtype == 8:                                      # bool
        return v != 0
    return <int64_t>v                                   # int64, uint64, (s)fixed64, double


cdef inline int pb_wire_of(int64_t vtype) noexcept nogil:
    """The wire type a value of this descriptor type has (outside a packed run)."""
    if vtype == 1 or vtype == 6 or vtype == 16:
        return 1
    if vtype == 2 or vtype == 7 or vtype == 15:
        return 5
    if vtype == 9 or vtype == 12 or vtype == 11:
        return 2
    if vtype == 10:
        return 3
    return 0


cdef Py_ssize_t pb_enum_find(PbState* st, const int64_t* f, int64_t number) noexcept nogil:
    """The enum table row of a number (sorted by number), or -1."""
    cdef Py_ssize_t lo = 0, hi = <Py_ssize_t>f[9] - 1, mid
    cdef const int64_t* t = st.aux + f[8]
    while lo <= hi:
        mid = (lo + hi) >> 1
        if t[3 * mid] == number:
            return mid
        if t[3 * mid] < number:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


cdef inline int pb_put_scalar(PbState* st, Py_ssize_t fi, int col, int64_t x, const uint8_t* p,
                       Py_ssize_t n, Py_ssize_t at) noexcept nogil:
    """One value of field fi (a number x, or the bytes p[:n]) into col."""
    cdef const int64_t* f = st.fields + PB_FIELD_WORDS * fi
    cdef int64_t target = f[5]
    cdef Py_ssize_t e
    cdef char num[24]
    cdef int k
    if target == PB_T_STR or target == PB_T_BIN:
        if target == PB_T_STR and not pyx_utf8_valid(p, <size_t>n):
            return pb_fail(st, PB_E_UTF8, fi, 0, at)
        return pb_put_bytes(st, col, p, n, NULL, 0)
    if target == PB_T_ENUM_STR:
        e = pb_enum_find(st, f, <int32_t>x)
        if e >= 0:
            e = f[8] + 3 * e
            return pb_put_bytes(st, col, st.blob + st.aux[e + 1], <Py_ssize_t>st.aux[e + 2], NULL, 0)
        # an open enum's unknown number: the name Java's descriptors make up for it
        k = snprintf(num, sizeof(num), "%d", <int>(<int32_t>x))
        return pb_put_bytes(st, col, st.blob + f[12], <Py_ssize_t>f[13], <const uint8_t*>num, k)
    return pb_put_num(st, col, target, x)


cdef int pb_put_default(PbState* st, Py_ssize_t fi, int col) noexcept nogil:
    cdef const int64_t* f = st.fields + PB_FIELD_WORDS * fi
    if f[5] == PB_T_STR or f[5] == PB_T_BIN:
        return pb_put_bytes(st, col, st.blob + f[10], <Py_ssize_t>f[11], NULL, 0)
    return pb_put_scalar(st, fi, col, f[10], NULL, 0, -1)


# --------------------------------------------------------------------------- the scan

cdef int pb_skip_group(PbState* st, Reader* r, uint64_t number, Py_ssize_t at,
                       Py_ssize_t* body_end=NULL) except -1 nogil:
    """Past a group (wire type 3) up to its end tag of the same number (body_end: where that
    tag starts, the end of the group's fields)."""
    cdef uint64_t tag, v
    cdef Py_ssize_t tat
    cdef int wt, rc
    if st.depth >= PB_DEPTH_LIMIT:
        return pb_fail(st, PB_E_DEPTH, PB_DEPTH_LIMIT, 0, at)
    st.depth += 1
    while True:
        if r.pos >= r.end:
            return pb_fail(st, PB_E_GROUP, <int64_t>number, 0, at)
        tat = r.pos
        pb_varint(st, r, &tag)
        wt = <int>(tag & 7)
        if wt == 4:
            if (tag >> 3) != number:
                return pb_fail(st, PB_E_GROUP, <int64_t>number, 0, at)
            if body_end != NULL:
                body_end[0] = tat
            break
        rc = pb_skip_value(st, r, tag, tat)
        if rc:
            return rc
    st.depth -= 1
    return 0


cdef int pb_skip_value(PbState* st, Reader* r, uint64_t tag, Py_ssize_t at) except -1 nogil:
    cdef uint64_t v
    cdef int wt = <int>(tag & 7)
    if (tag >> 3) == 0 or (tag >> 3) > 536870911:
        return pb_fail(st, PB_E_FIELDNUM, <int64_t>(tag >> 3), 0, at)
    if wt == 0:
        pb_varint(st, r, &v)
    elif wt == 1:
        pb_bytes(st, r, 8)
    elif wt == 5:
        pb_bytes(st, r, 4)
    elif wt == 2:
        pb_varint(st, r, &v)
        if v > <uint64_t>(r.end - r.pos):
            st.at = r.pos
            rd_need(r, <Py_ssize_t>(v if v < <uint64_t>INT32_MAX else INT32_MAX))
        r.pos += <Py_ssize_t>v
    elif wt == 3:
        return pb_skip_group(st, r, tag >> 3, at)
    else:
        return pb_fail(st, PB_E_BADWIRE, wt, 0, at)
    return 0


cdef int pb_grow_occ(PbState* st) noexcept nogil:
    cdef Py_ssize_t cap = st.occ_cap * 2 if st.occ_cap else 64
    cdef PbOcc* n = <PbOcc*>realloc(st.occ, cap * sizeof(PbOcc))
    if n == NULL:
        return pb_fail(st, PB_E_MEMORY, 0, 0, -1)
    st.occ = n
    st.occ_cap = cap
    return 0


cdef inline int pb_scan_range(PbState* st, const int64_t* nd, Reader* r, Py_ssize_t fb) except -1 nogil:
    """Record the fields of one byte range of a message into the level's chains at frm[fb:]."""
    cdef uint64_t tag, v, num
    cdef int wt, rc
    cdef Py_ssize_t at, pos, length, fi, k, nf = <Py_ssize_t>nd[2], lut_len = <Py_ssize_t>nd[4]
    cdef const int64_t* f
    cdef const uint8_t* p
    cdef int32_t* heads
    cdef int64_t oneof
    while r.pos < r.end:
        at = r.pos
        pb_varint(st, r, &tag)
        num = tag >> 3
        wt = <int>(tag & 7)
        if num == 0 or num > 536870911:
            return pb_fail(st, PB_E_FIELDNUM, <int64_t>num, 0, at)
        pos = r.pos
        length = 0
        v = 0
        if wt == 0:
            pb_varint(st, r, &v)
        elif wt == 1:
            p = pb_bytes(st, r, 8)
            memcpy(&v, p, 8)                    # little-endian, like the hosts
        elif wt == 5:
            p = pb_bytes(st, r, 4)
            v = pyx_le32(p)
        elif wt == 2:
            pb_varint(st, r, &v)
            if v > <uint64_t>(r.end - r.pos):
                st.at = r.pos
                rd_need(r, <Py_ssize_t>(v if v < <uint64_t>INT32_MAX else INT32_MAX))
            pos = r.pos
            length = <Py_ssize_t>v
            r.pos += length
        elif wt == 3:
            rc = pb_skip_group(st, r, num, at, &length)
            if rc:
                return rc
            length -= pos                       # a group's fields, up to its end tag
        else:
            return pb_fail(st, PB_E_BADWIRE, wt, 0, at)
        # the field: by the table, or past it a search
        fi = -1
        if num < <uint64_t>lut_len:
            fi = <Py_ssize_t>st.aux[nd[3] + <Py_ssize_t>num]
        elif lut_len:
            for k in range(nf):
                if st.fields[PB_FIELD_WORDS * (nd[1] + k)] == <int64_t>num:
                    fi = k
                    break
        if fi < 0:
            continue                            # an unknown field: skipped
        f = st.fields + PB_FIELD_WORDS * (nd[1] + fi)
        if f[2] == PB_M_SKIP:
            continue
        if wt != f[14] and not (wt == 2 and (f[6] & PB_F_REPEATED) and (f[6] & PB_F_PACKABLE)):
            return pb_fail(st, PB_E_WIRETYPE, nd[1] + fi, wt, at)
        if (f[6] & PB_F_CLOSED_ENUM) and wt == 0 and not (f[6] & PB_F_REPEATED) \
                and pb_enum_find(st, f, <int32_t>v) < 0:
            continue                            # a closed enum's unknown number is unknown
        heads = st.frm + fb
        oneof = f[7]
        if oneof >= 0:
            if heads[2 * nf + oneof] != fi:     # another member set: this one starts anew
                heads[fi] = -1
                heads[2 * nf + oneof] = <int32_t>fi
        if st.nocc >= st.occ_cap and pb_grow_occ(st):
            return -2
        k = st.nocc
        st.nocc += 1
        st.occ[k].next = -1
        st.occ[k].wt = wt
        st.occ[k].pos = pos
        st.occ[k].len = length
        st.occ[k].v = v
        heads = st.frm + fb
        if heads[fi] < 0:
            heads[fi] = <int32_t>k
        else:
            st.occ[heads[nf + fi]].next = <int32_t>k
        heads[nf + fi] = <int32_t>k
    return 0


cdef inline void pb_range(PbState* st, Reader* r, int32_t o) noexcept nogil:
    rd_init(r, st.row, st.occ[o].pos + st.occ[o].len, st.where, st.index)
    r.pos = st.occ[o].pos


cdef int pb_node(PbState* st, Py_ssize_t node, int32_t head, bint single) except -1 nogil:
    cdef const int64_t* nd = st.nodes + PB_NODE_WORDS * node
    cdef Py_ssize_t nf = <Py_ssize_t>nd[2], need, fb, occ_base = st.nocc, i, cap
    cdef int32_t o
    cdef int32_t* nfrm
    cdef Reader r
    cdef AvCol* c
    cdef int rc
    if st.depth >= PB_DEPTH_LIMIT:
        return pb_fail(st, PB_E_DEPTH, PB_DEPTH_LIMIT, 0,
                       st.occ[head].pos if head >= 0 else -1)
    st.depth += 1
    need = 2 * nf + <Py_ssize_t>nd[5]
    fb = st.nfrm
    if fb + need > st.frm_cap:
        cap = 2 * (fb + need) + 64
        nfrm = <int32_t*>realloc(st.frm, cap * sizeof(int32_t))
        if nfrm == NULL:
            return pb_fail(st, PB_E_MEMORY, 0, 0, -1)
        st.frm = nfrm
        st.frm_cap = cap
    st.nfrm += need
    # chain heads and oneof winners start empty (a tail is written with its head)
    for i in range(nf):
        st.frm[fb + i] = -1
    for i in range(2 * nf, need):
        st.frm[fb + i] = -1
    o = head
    while o >= 0:
        pb_range(st, &r, o)
        rc = pb_scan_range(st, nd, &r, fb)
        if rc:
            return rc
        if single:
            break
        o = st.occ[o].next
    c = &st.cols[nd[0]]
    if c.n >= c.cap:
        return pb_room(st, <int>nd[0], 0, c.n + 1)
    av_bit(c.valid, c.n, True)
    c.n += 1
    for i in range(nf):
        rc = pb_field(st, <Py_ssize_t>nd[1] + i, i, nf, fb, (nd[6] & PB_NODE_MAP_ENTRY) != 0)
        if rc:
            return rc
    st.nocc = occ_base
    st.nfrm = fb
    st.depth -= 1
    return 0


cdef int pb_last(PbState* st, int32_t head, bint single, uint64_t number, int64_t vtype,
                 int64_t fi, PbOcc* out) except -1 nogil:
    """The last occurrence of field `number` (of type vtype) in a chain of a small message
    (Timestamp, Duration, a wrapper): 1 found, 0 not, -2 a row error."""
    cdef Reader r
    cdef uint64_t tag, v
    cdef Py_ssize_t at
    cdef int wt, rc, found = 0
    cdef int32_t o = head
    cdef const uint8_t* p
    while o >= 0:
        pb_range(st, &r, o)
        while r.pos < r.end:
            at = r.pos
            pb_varint(st, &r, &tag)
            wt = <int>(tag & 7)
            if (tag >> 3) != number:
                rc = pb_skip_value(st, &r, tag, at)
                if rc:
                    return rc
                continue
            if wt != pb_wire_of(vtype):
                return pb_fail(st, PB_E_WIRETYPE, fi, wt, at)
            out.wt = wt
            if wt == 0:
                pb_varint(st, &r, &v)
            elif wt == 1:
                p = pb_bytes(st, &r, 8)
                memcpy(&v, p, 8)
            elif wt == 5:
                p = pb_bytes(st, &r, 4)
                v = pyx_le32(p)
            else:
                pb_varint(st, &r, &v)
                out.pos = r.pos
                out.len = <Py_ssize_t>v
                pb_bytes(st, &r, <Py_ssize_t>(v if v < <uint64_t>INT32_MAX else INT32_MAX))
            out.v = v
            found = 1
        if single:
            break
        o = st.occ[o].next
    return found


cdef int pb_time(PbState* st, Py_ssize_t fi, int32_t head, bint single, int col) except -1 nogil:
    """A Timestamp or Duration as microseconds: seconds * 10**6 + nanos / 1000 (truncated)."""
    cdef PbOcc sec, nan
    cdef int64_t s = 0, n = 0, us
    cdef int rc
    rc = pb_last(st, head, single, 1, 3, fi, &sec)
    if rc < 0:
        return rc
    if rc:
        s = <int64_t>sec.v
    rc = pb_last(st, head, single, 2, 5, fi, &nan)
    if rc < 0:
        return rc
    if rc:
        n = <int64_t><int32_t><uint32_t>nan.v
    if av_mul_overflow(s, 1000000, &us) or pb_add_overflow(us, n // 1000, &us):
        return pb_fail(st, PB_E_TIME, fi, s, st.occ[head].pos if head >= 0 else -1)
    return pb_put_num(st, col, PB_T_I64, us)


cdef int pb_wrap(PbState* st, Py_ssize_t fi, int32_t head, bint single, int col) except -1 nogil:
    """A wrapper's value (field 1): null when it is the default, unless defaults are emitted."""
    cdef const int64_t* f = st.fields + PB_FIELD_WORDS * fi
    cdef PbOcc val
    cdef int rc
    cdef int64_t x
    rc = pb_last(st, head, single, 1, f[1], fi, &val)
    if rc < 0:
        return rc
    if rc:
        if val.wt == 2:
            if val.len:
                return pb_put_scalar(st, fi, col, 0, st.row + val.pos, val.len, val.pos)
        else:
            x = pb_convert(f[1], val.v)
            if x != 0:
                return pb_put_scalar(st, fi, col, x, NULL, 0, -1)
    if st.emit_defaults:
        return pb_put_default(st, fi, col)
    return pb_nulls(st, col)


cdef int pb_item(PbState* st, Py_ssize_t fi, const int64_t* f, int32_t o, int col) except -1 nogil:
    """One occurrence of a repeated field into the list's item column (a packed run: all of it)."""
    cdef Reader r
    cdef uint64_t v
    cdef const uint8_t* p
    cdef int64_t vtype = f[1], x
    cdef int rc, wt
    if f[2] == PB_M_MESSAGE or f[2] == PB_M_MAP:
        return pb_node(st, <Py_ssize_t>f[4], o, True)
    if f[2] == PB_M_TIME:
        return pb_time(st, fi, o, True, col)
    if f[2] == PB_M_WRAP:
        return pb_wrap(st, fi, o, True, col)
    wt = st.occ[o].wt
    if wt == 2 and f[5] != PB_T_STR and f[5] != PB_T_BIN:
        pb_range(st, &r, o)                     # a packed run
        wt = pb_wire_of(vtype)
        while r.pos < r.end:
            if wt == 0:
                pb_varint(st, &r, &v)
            elif wt == 1:
                if r.end - r.pos < 8:
                    return pb_fail(st, PB_E_PACKED, fi, st.occ[o].len, st.occ[o].pos)
                p = pb_bytes(st, &r, 8)
                memcpy(&v, p, 8)
            else:
                if r.end - r.pos < 4:
                    return pb_fail(st, PB_E_PACKED, fi, st.occ[o].len, st.occ[o].pos)
                p = pb_bytes(st, &r, 4)
                v = pyx_le32(p)
            x = pb_convert(vtype, v)
            if (f[6] & PB_F_CLOSED_ENUM) and pb_enum_find(st, f, <int32_t>x) < 0:
                continue
            if f[5] != PB_T_ENUM_STR:
                rc = pb_put_num(st, col, f[5], x)
            else:
                rc = pb_put_scalar(st, fi, col, x, NULL, 0, -1)
            if rc:
                return rc
        return 0
    if wt == 2:
        return pb_put_scalar(st, fi, col, 0, st.row + st.occ[o].pos, st.occ[o].len, st.occ[o].pos)
    x = pb_convert(vtype, st.occ[o].v)
    if (f[6] & PB_F_CLOSED_ENUM) and pb_enum_find(st, f, <int32_t>x) < 0:
        return 0
    return pb_put_scalar(st, fi, col, x, NULL, 0, -1)


cdef inline int pb_field(PbState* st, Py_ssize_t fi, Py_ssize_t local, Py_ssize_t nf, Py_ssize_t fb,
                  bint entry) except -1 nogil:
    """Field fi of the level whose chains are at frm[fb:], into its column: Spark's value of
    it (repeated: a list; absent or default: null, or the default where Spark gives one)."""
    cdef const int64_t* f = st.fields + PB_FIELD_WORDS * fi
    cdef int64_t mode = f[2], flags = f[6], x
    cdef int col = <int>f[3], rc, item
    cdef int32_t head = st.frm[fb + local], tail = st.frm[fb + nf + local], o
    cdef AvCol* c
    cdef bint present
    if mode == PB_M_SKIP:
        return 0
    if mode == PB_M_DUMMY:
        return pb_nulls(st, col)
    if flags & PB_F_REPEATED:
        c = &st.cols[col]
        item = c.child
        o = head
        while o >= 0:
            rc = pb_item(st, fi, f, o, item)
            if rc:
                return rc
            o = st.occ[o].next
        c = &st.cols[col]
        if c.n >= c.cap:
            return pb_room(st, col, 0, c.n + 1)
        (<int32_t*>c.data)[c.n + 1] = <int32_t>st.cols[item].n
        av_bit(c.valid, c.n, True)
        c.n += 1
        return 0
    present = head >= 0 and (f[7] < 0 or st.frm[fb + 2 * nf + f[7]] == local)
    if not present and (flags & PB_F_REQUIRED):
        return pb_fail(st, PB_E_REQUIRED, fi, 0, -1)
    if mode == PB_M_MESSAGE:
        if present or entry:                    # a map's missing value: the default message
            return pb_node(st, <Py_ssize_t>f[4], head, False)
        return pb_nulls(st, col)
    if mode == PB_M_TIME:
        if present or entry:
            return pb_time(st, fi, head, False, col)
        return pb_nulls(st, col)
    if mode == PB_M_WRAP:
        if present or entry:
            return pb_wrap(st, fi, head, False, col)
        return pb_nulls(st, col)
    if present:
        o = tail
        if st.occ[o].wt == 2:
            if st.occ[o].len or (flags & PB_F_PRESENCE) or entry:
                return pb_put_scalar(st, fi, col, 0, st.row + st.occ[o].pos, st.occ[o].len,
                                     st.occ[o].pos)
        else:
            x = pb_convert(f[1], st.occ[o].v)
            if x != 0 or (flags & PB_F_PRESENCE) or entry:
                if f[5] != PB_T_ENUM_STR:       # a number: straight into its column
                    return pb_put_num(st, col, f[5], x)
                return pb_put_scalar(st, fi, col, x, NULL, 0, -1)
        # an implicit-presence field at its default: absent, as the runtimes read it
    if entry or (flags & PB_F_HAS_DEFAULT) or (st.emit_defaults and not (flags & PB_F_PRESENCE)):
        return pb_put_default(st, fi, col)
    return pb_nulls(st, col)


# --------------------------------------------------------------------------- the framing scan

cdef int _pb_prefix(const uint8_t* p, Py_ssize_t n, Py_ssize_t* end) noexcept nogil:
    """The length of the Confluent prefix at p (magic, id or GUID, message-index array) in
    end: 0, or -PB_E_HEADER / -PB_E_MAGIC, or -PB_E_INDEX with end the reason (1 truncated,
    2 count, 3 negative index). Varints read here are bounded by n, 10 bytes each."""
    cdef Py_ssize_t j
    cdef uint64_t u
    cdef int64_t count = -1, idx
    cdef int k
    cdef bint done
    if n < 1 or (p[0] == 0 and n < 5) or (p[0] == 1 and n < 17):
        return -PB_E_HEADER
    if p[0] == 0:
        j = 5
    elif p[0] == 1:
        j = 17
    else:
        return -PB_E_MAGIC
    while True:
        u = 0
        done = False
        for k in range(10):
            if j >= n:
                break
            u |= (<uint64_t>(p[j] & 0x7F)) << (7 * k)
            j += 1
            if p[j - 1] < 0x80:
                done = True
                break
        if not done:
            end[0] = 1
            return -PB_E_INDEX
        idx = <int64_t>((u >> 1) ^ ((<uint64_t>0) - (u & 1)))
        if count < 0:
            count = idx
            if count < 0 or count > PB_INDEX_LIMIT:
                end[0] = 2
                return -PB_E_INDEX
            if count == 0:
                break
            continue
        if idx < 0 or idx > INT32_MAX:
            end[0] = 3
            return -PB_E_INDEX
        count -= 1
        if count == 0:
            break
    end[0] = j
    return 0


def protobuf_frame_scan(values, headers=None):
    """The Confluent prefix of each value of a pa.BinaryArray: magic byte, schema id (0x00 + 4
    bytes, or 0x01 + a 16-byte GUID), then the message-index array (a zig-zag count, then the
    indexes; a count of 0 is [0]). headers: None, or a pa.BinaryArray of one entry per row,
    the prefix a header (__value_schema_id) gives, null where a row has none; such a row's
    value is the bare message. Returns (slots, skips, keys): int32 per row an index into keys
    (the distinct prefixes), -1 for a null value, or -PB_E_HEADER / -PB_E_MAGIC / -PB_E_INDEX;
    int32 per row the bytes to skip (for -PB_E_INDEX: why)."""
    cdef Py_ssize_t n = len(values), i, off0 = values.offset, hoff0 = 0
    bufs = values.buffers()
    cdef const uint8_t* vbits = _av_address(bufs[0])
    cdef const int32_t* offs = <const int32_t*>_av_address(bufs[1])
    cdef const uint8_t* data = _av_data(bufs[2])
    cdef const uint8_t* hbits = NULL
    cdef const int32_t* hoffs = NULL
    cdef const uint8_t* hdata = NULL
    if headers is not None:
        if len(headers) != n:
            raise ValueError("headers: one entry per value")
        hbufs = headers.buffers()
        if len(hbufs) != 3:
            raise TypeError("headers is a pa.BinaryArray")
        hoff0 = headers.offset
        hbits = _av_address(hbufs[0])
        hoffs = <const int32_t*>_av_address(hbufs[1])
        hdata = _av_data(hbufs[2])
    slots_b = bytearray(4 * n)
    skips_b = bytearray(4 * n)
    cdef int32_t* slots = <int32_t*><char*>slots_b if n else NULL
    cdef int32_t* skips = <int32_t*><char*>skips_b if n else NULL
    cdef const uint8_t* p
    cdef const uint8_t* last_key = NULL
    cdef Py_ssize_t len_, end = 0, last_len = -1
    cdef int rc
    cdef bint in_header
    # where each row's prefix starts (in its value or its header) and how long it is
    cdef Py_ssize_t* starts = <Py_ssize_t*>malloc((2 * n if n else 2) * sizeof(Py_ssize_t))
    if starts == NULL:
        raise MemoryError()
    cdef Py_ssize_t* ends = starts + n
    # pass 1 without the GIL: each prefix read; -2 marks a row whose prefix is the one of the
    # last row read before it (the common case: no lookup), -3 one to look up
    with nogil:
        for i in range(n):
            if vbits != NULL and not (vbits[(i + off0) >> 3] >> ((i + off0) & 7)) & 1:
                slots[i] = -1
                continue
            in_header = hoffs != NULL and (hbits == NULL or
                                           (hbits[(i + hoff0) >> 3] >> ((i + hoff0) & 7)) & 1)
            if in_header:
                p = hdata + hoffs[i + hoff0]
                len_ = hoffs[i + hoff0 + 1] - hoffs[i + hoff0]
            else:
                p = data + offs[i + off0]
                len_ = offs[i + off0 + 1] - offs[i + off0]
            rc = _pb_prefix(p, len_, &end)
            if rc < 0:
                slots[i] = rc
                skips[i] = <int32_t>(end if rc == -PB_E_INDEX else
                                     (p[0] if rc == -PB_E_MAGIC else len_))
                continue
            skips[i] = 0 if in_header else <int32_t>end
            starts[i] = p - (hdata if in_header else data)
            ends[i] = end
            if last_key != NULL and last_len == end and memcmp(last_key, p, end) == 0:
                slots[i] = -2
            else:
                slots[i] = -3
                last_key = p
                last_len = end
    # pass 2: the distinct prefixes as keys
    keys = {}
    key_list = []
    cdef int32_t last_slot = -1
    try:
        for i in range(n):
            if slots[i] == -2:
                slots[i] = last_slot
            elif slots[i] == -3:
                in_header = hoffs != NULL and (hbits == NULL or
                                               (hbits[(i + hoff0) >> 3] >> ((i + hoff0) & 7)) & 1)
                p = (hdata if in_header else data) + starts[i]
                key = bytes((<const char*>p)[:ends[i]])
                slot = keys.get(key)
                if slot is None:
                    slot = keys[key] = len(key_list)
                    key_list.append(key)
                slots[i] = last_slot = slot
    finally:
        free(starts)
    return bytes(slots_b), bytes(skips_b), key_list



# --------------------------------------------------------------------------- the decode

ctypedef int (*pb_row_t)(PbState* st, Py_ssize_t node, int32_t head, bint single) noexcept nogil


def protobuf_decode(values, list programs, slots=None, skips=None):
    """Decode the Protobuf messages of a pa.BinaryArray with the programs (all of one layout).
    A row runs programs[slots[i]] (slots: int32 per row; None: all 0) over its bytes from
    skips[i] (int32 per row; None: 0); an entry of programs that is a str is the reason of a
    row error for the rows of that slot. Returns (columns, errors) as avro_decode does."""
    cdef Py_ssize_t n = len(values), i, off0 = values.offset, nprog = len(programs), k
    cdef Py_ssize_t start, length, sk, data_bytes
    cdef int32_t slot
    cdef ProtobufProgram first = _decode_programs(programs, ProtobufProgram, "protobuf_decode",
                                                  "one layout")
    cdef ProtobufProgram prog
    bufs = _binary_buffers(values, "protobuf_decode")
    cdef const uint8_t* vbits = _av_address(bufs[0])
    cdef const int32_t* offs = <const int32_t*>_av_address(bufs[1])
    cdef const uint8_t* data = _av_data(bufs[2])
    cdef const int32_t* slot_of = NULL
    cdef const int32_t* skip_of = NULL
    if slots is not None:
        slots_keep = _per_row(slots, n, 4, "slots")
        slot_of = <const int32_t*><const char*>slots_keep
    if skips is not None:
        skips_keep = _per_row(skips, n, 4, "skips")
        skip_of = <const int32_t*><const char*>skips_keep
    data_bytes = (offs[off0 + n] - offs[off0]) if n else 0
    cols = _AvColumns(first.kinds, first.children, first.widths, first.aligned, n, data_bytes)
    cdef PbState st
    memset(&st, 0, sizeof(PbState))
    cdef Where where
    where.topic = NULL
    where.partition = -1
    where.origin = 0
    where.inflated = False
    st.where = &where
    st.cols = cols.cols
    cdef Py_ssize_t root_n = 0, nnested = 0
    cdef int* nested = _nested_columns(cols, &nnested)
    cdef int rc = 0, fault
    cdef bint pending_null = False
    cdef PbProgRef* progs = <PbProgRef*>malloc((nprog if nprog else 1) * sizeof(PbProgRef))
    if progs == NULL:
        free(nested)
        raise MemoryError()
    for k in range(nprog):
        if isinstance(programs[k], ProtobufProgram):
            prog = <ProtobufProgram>programs[k]
            progs[k].nodes = <const int64_t*><const char*>prog._nodes
            progs[k].fields = <const int64_t*><const char*>prog._fields
            progs[k].aux = <const int64_t*><const char*>prog._aux
            progs[k].blob = <const uint8_t*><const char*>prog._blob
            progs[k].emit_defaults = prog.emit_defaults
        else:
            progs[k].nodes = NULL
    cdef AvCol* c
    cdef pb_row_t row_fn = <pb_row_t>pb_node
    errors = []
    st.aux = <const int64_t*><const char*>first._aux     # the null lists: one layout
    slot = 0
    sk = 0
    i = 0
    try:
        while i < n:
            with nogil:
                while i < n:
                    st.err = 0
                    st.epos = -1
                    st.at = -1
                    st.depth = 0
                    st.nocc = 0
                    st.nfrm = 0
                    rc = 0
                    if vbits != NULL and not (vbits[(i + off0) >> 3] >> ((i + off0) & 7)) & 1:
                        if pb_nulls(&st, 0):      # a tombstone: a null value, not an error
                            pending_null = True
                            break
                        i += 1
                        continue
                    slot = slot_of[i] if slot_of != NULL else 0
                    sk = skip_of[i] if skip_of != NULL else 0
                    start = offs[i + off0]
                    length = offs[i + off0 + 1] - start
                    root_n = st.cols[0].n
                    for k in range(nnested):
                        c = &st.cols[nested[k]]
                        c.snap_n = c.n
                        c.snap_used = c.used
                    if slot == -1:
                        if pb_nulls(&st, 0):
                            pending_null = True
                            break
                        i += 1
                        continue
                    if slot < 0:
                        # the scan's why: the header's length, its magic byte, the index fault
                        pb_fail(&st, -slot, sk, 0, -1)
                        rc = -2
                    elif slot >= nprog or progs[slot].nodes == NULL:
                        pb_fail(&st, PB_E_UNKNOWN, slot, 0, -1)
                        rc = -2
                    elif sk > length:
                        pb_fail(&st, PB_E_HEADER, length, 0, -1)
                        rc = -2
                    else:
                        st.nodes = progs[slot].nodes
                        st.fields = progs[slot].fields
                        st.aux = progs[slot].aux     # its tables (the null lists: one layout)
                        st.blob = progs[slot].blob
                        st.emit_defaults = progs[slot].emit_defaults
                        st.row = data + start + sk
                        st.row_len = length - sk
                        st.index = i
                        # the root's chain: one occurrence, the whole message
                        if st.occ_cap == 0 and pb_grow_occ(&st):
                            rc = -2
                        else:
                            st.occ[0].next = -1
                            st.occ[0].wt = 2
                            st.occ[0].pos = 0
                            st.occ[0].len = st.row_len
                            st.occ[0].v = 0
                            st.nocc = 1
                            rc = row_fn(&st, 0, 0, True)
                        if rc == -2 and st.epos >= 0:
                            st.epos += sk
                    if rc == 0:
                        i += 1
                        continue
                    for k in range(cols.ncols):         # roll the row back
                        c = &st.cols[k]
                        if c.aligned:
                            c.n = root_n
                            if c.kind == AV_K_BIN:
                                c.used = (<int32_t*>c.data)[root_n]
                        else:
                            c.n = c.snap_n
                            c.used = c.snap_used
                    if rc == -1 or st.err == PB_E_ROOM or st.err == PB_E_MEMORY:
                        break                         # needs the GIL: below
                    with gil:
                        errors.append((i, _pb_reason(&st, programs, slot)))
                    if pb_nulls(&st, 0):
                        pending_null = True
                        break
                    i += 1
            if i >= n:
                break
            if rc == -1:
                fault = _av_fault()
                errors.append((i, _av_fault_reason(fault, st.at + sk)))
                pending_null = True
            elif st.err == PB_E_MEMORY:
                raise MemoryError()
            elif st.err == PB_E_ROOM:
                cols._grow(st.grow_col, st.grow_bytes, st.grow_need)
            if pending_null:
                st.err = 0
                while pb_nulls(&st, 0):
                    cols._grow(st.grow_col, st.grow_bytes, st.grow_need)
                    st.err = 0
                pending_null = False
                i += 1
    finally:
        free(progs)
        free(nested)
        free(st.occ)
        free(st.frm)
    return cols.finish(), errors


_PB_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 3: "start group",
                  4: "end group", 5: "32-bit"}


cdef str _pb_reason(PbState* st, list programs, Py_ssize_t slot):
    cdef int e = st.err
    cdef int64_t a = st.ea, b = st.eb
    where = f" at byte {st.epos}" if st.epos >= 0 else ""
    prog = programs[slot] if 0 <= slot < len(programs) else None
    names = prog.names if isinstance(prog, ProtobufProgram) else ()
    field = f"field {names[a]}" if 0 <= a < len(names) else f"field {a}"
    if e == PB_E_WIRETYPE:
        return f"{field} has wire type {b} ({_PB_WIRE_NAMES.get(b, '?')}), which its type cannot have{where}"
    if e == PB_E_BADWIRE:
        return f"wire type {a} is not a valid wire type here{where}"
    if e == PB_E_FIELDNUM:
        return f"field number {a} out of range{where}"
    if e == PB_E_UTF8:
        return f"invalid UTF-8 in string {field}{where}"
    if e == PB_E_DEPTH:
        return f"messages nested over {a} deep{where}"
    if e == PB_E_PACKED:
        return f"packed {field} of {b} bytes is not a whole number of values{where}"
    if e == PB_E_REQUIRED:
        return f"required {field} is missing"
    if e == PB_E_TIME:
        return f"{field}: {b} seconds out of range in microseconds{where}"
    if e == PB_E_GROUP:
        return f"group of field number {a} has no end{where}"
    if e == PB_E_HEADER:
        return f"Confluent prefix of {a} bytes is shorter than its magic byte and schema id"
    if e == PB_E_MAGIC:
        return f"bad magic byte 0x{a:02x} (Confluent framing has 0x00 or 0x01)"
    if e == PB_E_INDEX:
        why = {1: "truncated", 2: "a count below 0 or over 64",
               3: "a negative index"}.get(a, "unreadable")
        return f"bad Confluent message-index array ({why})"
    if e == PB_E_UNKNOWN:
        p = programs[a] if 0 <= a < len(programs) else None
        return p if isinstance(p, str) else f"no program for slot {a}"
    return f"Protobuf decode error {e}{where}"
