# Bounds-checked reads of wire bytes: a C struct plus inline functions (rd_*).
#
# Every read of a record set, of a batch and of a decompressed region goes through these.
# A read past the end, a varint longer than its type or an impossible length calls
# rd_fault, which raises the module's one CorruptRecordError (errors.pyx) through the cold,
# out-of-line pyx_fault of wire.h, naming the reader's topic, partition, offset and byte.
# Values come back through out-parameters so that -1 stays the error signal; all of it runs
# without the GIL.

cdef extern from "wire.h" nogil:
    uint16_t pyx_be16(const uint8_t* p)
    uint32_t pyx_be32(const uint8_t* p)
    uint64_t pyx_be64(const uint8_t* p)
    uint32_t pyx_le32(const uint8_t* p)
    uint32_t pyx_crc32(const uint8_t* p, size_t n)
    void pyx_crc32c_init()
    void pyx_crc32c_use_hw(int on)
    uint32_t pyx_crc32c(const uint8_t* p, size_t n)
    uint8_t pyx_load_u8(const uint8_t* p)
    void pyx_store_u8(uint8_t* p, uint8_t v)
    uint32_t pyx_xxh32_short(const uint8_t* p, size_t n)
    int pyx_utf8_valid(const uint8_t* s, size_t n)
    void pyx_copy(uint8_t* dst, const uint8_t* src, size_t n)
    int pyx_fault(PyObject* topic, int32_t partition, int64_t offset, Py_ssize_t origin,
                  int inflated, Py_ssize_t pos, int fault, int64_t a, int64_t b) except -1

cdef extern from "wire.h":
    ctypedef int (*pyx_fault_hook)(PyObject* topic, int32_t partition, int64_t offset,
                                   Py_ssize_t origin, int inflated, Py_ssize_t pos, int fault,
                                   int64_t a, int64_t b)
    void pyx_set_fault_hook(pyx_fault_hook hook)


cdef enum Fault:
    # what a reader (or the v2 record parser) found wrong; a and b are the fault's numbers
    F_SHORT = 1          # a read of a bytes with b left
    F_VARINT = 2         # a varint longer than a bytes
    F_LENGTH = 3         # a negative length a (-1, null, is not one)
    F_RECORD_LENGTH = 4  # a record declares a bytes, its fields take b
    F_TRAILING = 5       # a bytes left after the batch's last record


ctypedef struct Where:
    # Where a reader's bytes come from, for errors only (shared by a region's readers).
    PyObject* topic             # borrowed
    int32_t partition
    Py_ssize_t origin           # record-set byte at the region's buf[0]; when inflated, the
                                # byte of the batch the region was decompressed from
    bint inflated               # the region holds decompressed records: errors name both


ctypedef struct Reader:
    # Small on purpose: the record loops copy it into locals kept in registers.
    const uint8_t* buf          # start of the region (never NULL)
    Py_ssize_t pos              # next byte to read, relative to buf
    Py_ssize_t end              # one past the last readable byte, relative to buf
    int64_t offset              # best known offset for errors (-1: unknown)
    const Where* where          # for errors; outlives the reader (a walker field)


cdef inline void rd_init(Reader* r, const uint8_t* buf, Py_ssize_t length, const Where* where,
                         int64_t offset) noexcept nogil:
    r.buf = buf
    r.pos = 0
    r.end = length
    r.offset = offset
    r.where = where


cdef inline int rd_fault(Reader r, int fault, int64_t a, int64_t b) except -1 nogil:
    # The reader by value (and its fields by value to pyx_fault): the C compiler may leave
    # this cold call out of line, and a reader whose address escapes to it could not be
    # kept in registers in the record loops.
    return pyx_fault(r.where.topic, r.where.partition, r.offset, r.where.origin,
                     r.where.inflated, r.pos, fault, a, b)


cdef inline Py_ssize_t rd_left(const Reader* r) noexcept nogil:
    return r.end - r.pos


cdef inline int rd_need(const Reader* r, Py_ssize_t n) except -1 nogil:
    """n (>= 0) more bytes are there."""
    if n < 0:
        return rd_fault(r[0], F_LENGTH, n, 0)
    if r.end - r.pos < n:
        return rd_fault(r[0], F_SHORT, n, r.end - r.pos)
    return 0


cdef inline int rd_i8(Reader* r, int8_t* out) except -1 nogil:
    if r.end - r.pos < 1:
        return rd_fault(r[0], F_SHORT, 1, r.end - r.pos)
    out[0] = <int8_t>r.buf[r.pos]
    r.pos += 1
    return 0


cdef inline int rd_i16(Reader* r, int16_t* out) except -1 nogil:
    if r.end - r.pos < 2:
        return rd_fault(r[0], F_SHORT, 2, r.end - r.pos)
    out[0] = <int16_t>pyx_be16(r.buf + r.pos)
    r.pos += 2
    return 0


cdef inline int rd_u32(Reader* r, uint32_t* out) except -1 nogil:
    if r.end - r.pos < 4:
        return rd_fault(r[0], F_SHORT, 4, r.end - r.pos)
    out[0] = pyx_be32(r.buf + r.pos)
    r.pos += 4
    return 0


cdef inline int rd_i32(Reader* r, int32_t* out) except -1 nogil:
    if r.end - r.pos < 4:
        return rd_fault(r[0], F_SHORT, 4, r.end - r.pos)
    out[0] = <int32_t>pyx_be32(r.buf + r.pos)
    r.pos += 4
    return 0


cdef inline int rd_u32le(Reader* r, uint32_t* out) except -1 nogil:
    """Little-endian (gzip's trailer), the one exception to Kafka's network order."""
    if r.end - r.pos < 4:
        return rd_fault(r[0], F_SHORT, 4, r.end - r.pos)
    out[0] = pyx_le32(r.buf + r.pos)
    r.pos += 4
    return 0


cdef inline int rd_i64(Reader* r, int64_t* out) except -1 nogil:
    if r.end - r.pos < 8:
        return rd_fault(r[0], F_SHORT, 8, r.end - r.pos)
    out[0] = <int64_t>pyx_be64(r.buf + r.pos)
    r.pos += 8
    return 0


cdef inline int rd_uvarint(Reader* r, uint64_t* out, int max_bytes) except -1 nogil:
    """The one varint routine: unsigned base-128, least significant group first, at most
    max_bytes bytes (5 for int32, 10 for int64). Bits past 64 are dropped."""
    cdef const uint8_t* p = r.buf + r.pos
    cdef Py_ssize_t avail = r.end - r.pos
    cdef uint64_t v
    cdef uint64_t b
    cdef int i
    if avail >= 2:                       # fast paths: one or two bytes
        if p[0] < 0x80:
            out[0] = p[0]
            r.pos += 1
            return 0
        if p[1] < 0x80:
            out[0] = (p[0] & 0x7F) | (<uint64_t>p[1] << 7)
            r.pos += 2
            return 0
    v = 0
    i = 0
    while True:
        if i >= max_bytes:
            return rd_fault(r[0], F_VARINT, max_bytes, 0)
        if i >= avail:
            return rd_fault(r[0], F_SHORT, i + 1, avail)
        b = p[i]
        v |= (b & 0x7F) << (7 * i)
        i += 1
        if b < 0x80:
            break
    r.pos += i
    out[0] = v
    return 0


cdef inline int rd_varint(Reader* r, int32_t* out) except -1 nogil:
    """Kafka's zig-zag int32 varint (like Java's ByteUtils.readVarint, bits past 32 drop)."""
    cdef uint64_t u
    cdef uint32_t v
    rd_uvarint(r, &u, 5)
    v = <uint32_t>u
    out[0] = <int32_t>((v >> 1) ^ ((<uint32_t>0) - (v & 1)))
    return 0


cdef inline int rd_varlong(Reader* r, int64_t* out) except -1 nogil:
    """Kafka's zig-zag int64 varint."""
    cdef uint64_t v
    rd_uvarint(r, &v, 10)
    out[0] = <int64_t>((v >> 1) ^ ((<uint64_t>0) - (v & 1)))
    return 0


cdef inline int rd_skip(Reader* r, Py_ssize_t n) except -1 nogil:
    rd_need(r, n)
    r.pos += n
    return 0


cdef inline const uint8_t* rd_bytes(Reader* r, Py_ssize_t n) except NULL nogil:
    """Pointer to the next n bytes (n >= 0), advancing past them."""
    cdef const uint8_t* p
    if n < 0:
        rd_fault(r[0], F_LENGTH, n, 0)
        return NULL
    if r.end - r.pos < n:
        rd_fault(r[0], F_SHORT, n, r.end - r.pos)
        return NULL
    p = r.buf + r.pos
    r.pos += n
    return p


cdef inline int rd_sub(Reader* r, Reader* sub, Py_ssize_t n) except -1 nogil:
    """sub reads the next n bytes of r, a window on the same region (so positions in
    errors stay those of r's region), and r moves past them."""
    rd_need(r, n)
    sub[0] = r[0]
    sub.end = r.pos + n
    r.pos += n
    return 0
