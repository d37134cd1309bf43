# Bounds-checked reader over wire bytes: a C struct plus inline functions.
# Every read from a fetch buffer (or a decompressed batch) goes through these; a read
# past the end or a malformed varint raises pyconsumer.errors.CorruptRecordError naming
# the topic, partition and the best known offset (batch base offset or record offset).
# Values come back through out-parameters so that -1 stays free as the error signal.
# A module that cimports this must register its error factory once at import with
# pyx_rd_set_error_factory(callable) (pyext.records does); the factory raises.
from cpython.ref cimport PyObject
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                          uint32_t, uint64_t)

cdef extern from "wire.h" nogil:
    uint16_t pyx_be16(const uint8_t* p)
    uint32_t pyx_be32(const uint8_t* p)
    uint64_t pyx_be64(const uint8_t* p)
    uint32_t pyx_crc32(const uint8_t* p, size_t n)
    uint32_t pyx_xxh32_short(const uint8_t* p, size_t n)
    int pyx_utf8_valid(const uint8_t* s, size_t n)
    void pyx_copy(uint8_t* dst, const uint8_t* src, size_t n)
    int pyx_rd_raise(PyObject* topic, int32_t partition, int64_t offset, Py_ssize_t pos,
                     Py_ssize_t end, int code, Py_ssize_t n) except -1
    void pyx_rd_set_error_factory(object factory) noexcept with gil


ctypedef struct Reader:
    const uint8_t* buf      # start of the readable region (never NULL)
    Py_ssize_t pos          # next byte to read, relative to buf
    Py_ssize_t end          # one past the last readable byte, relative to buf
    PyObject* topic         # borrowed, for error messages only
    int32_t partition       # for error messages
    int64_t offset          # best known offset for error messages (-1: unknown)


cdef inline void rd_init(Reader* r, const uint8_t* buf, Py_ssize_t length, PyObject* topic,
                         int32_t partition, int64_t offset) noexcept nogil:
    r.buf = buf
    r.pos = 0
    r.end = length
    r.topic = topic
    r.partition = partition
    r.offset = offset


cdef inline int rd_fail(Reader* r, str what) except -1:
    """Raise CorruptRecordError for a malformed read at the reader's position."""
    from pyconsumer.errors import CorruptRecordError
    topic = <object>r.topic if r.topic is not NULL else None
    raise CorruptRecordError(
        f"{what} at byte {r.pos} of {r.end}", topic=topic, partition=r.partition,
        offset=(r.offset if r.offset >= 0 else None))


cdef inline int rd_fail_nogil(Reader* r, int code, Py_ssize_t n) except -1 nogil:
    # code 0: short read of n bytes; 1: malformed varint; 2: invalid length n.
    # Out of line (wire.h) so the readers stay inlinable; raises CorruptRecordError through
    # the factory the extension module registers at import.
    return pyx_rd_raise(r.topic, r.partition, r.offset, r.pos, r.end, code, n)


cdef inline int rd_need(Reader* r, Py_ssize_t n) except -1 nogil:
    if n < 0:
        return rd_fail_nogil(r, 2, n)
    if r.end - r.pos < n:
        return rd_fail_nogil(r, 0, n)
    return 0


cdef inline int rd_i8(Reader* r, int8_t* out) except -1 nogil:
    if r.end - r.pos < 1:
        return rd_fail_nogil(r, 0, 1)
    out[0] = <int8_t>r.buf[r.pos]
    r.pos += 1
    return 0


cdef inline int rd_i16(Reader* r, int16_t* out) except -1 nogil:
    if r.end - r.pos < 2:
        return rd_fail_nogil(r, 0, 2)
    out[0] = <int16_t>pyx_be16(r.buf + r.pos)
    r.pos += 2
    return 0


cdef inline int rd_i32(Reader* r, int32_t* out) except -1 nogil:
    if r.end - r.pos < 4:
        return rd_fail_nogil(r, 0, 4)
    out[0] = <int32_t>pyx_be32(r.buf + r.pos)
    r.pos += 4
    return 0


cdef inline int rd_i64(Reader* r, int64_t* out) except -1 nogil:
    if r.end - r.pos < 8:
        return rd_fail_nogil(r, 0, 8)
    out[0] = <int64_t>pyx_be64(r.buf + r.pos)
    r.pos += 8
    return 0


cdef inline int rd_varint(Reader* r, int32_t* out) except -1 nogil:
    """Zig-zag varint (Kafka's int32 varint, at most 5 bytes)."""
    cdef const uint8_t* p = r.buf + r.pos
    cdef Py_ssize_t avail = r.end - r.pos
    cdef uint32_t v
    cdef uint32_t b
    cdef Py_ssize_t i
    if avail >= 2:                       # fast paths: one or two bytes
        if p[0] < 0x80:
            v = p[0]
            r.pos += 1
            out[0] = <int32_t>((v >> 1) ^ ((<uint32_t>0) - (v & 1)))
            return 0
        if p[1] < 0x80:
            v = (p[0] & 0x7F) | (<uint32_t>p[1] << 7)
            r.pos += 2
            out[0] = <int32_t>((v >> 1) ^ ((<uint32_t>0) - (v & 1)))
            return 0
    v = 0
    i = 0
    while True:
        if i >= avail:
            return rd_fail_nogil(r, 0, i + 1)
        if i >= 5:
            return rd_fail_nogil(r, 1, 0)
        b = p[i]
        v |= (b & 0x7F) << (7 * i)
        i += 1
        if b < 0x80:
            break
    r.pos += i
    out[0] = <int32_t>((v >> 1) ^ ((<uint32_t>0) - (v & 1)))
    return 0


cdef inline int rd_varlong(Reader* r, int64_t* out) except -1 nogil:
    """Zig-zag varlong (Kafka's int64 varint, at most 10 bytes)."""
    cdef const uint8_t* p = r.buf + r.pos
    cdef Py_ssize_t avail = r.end - r.pos
    cdef uint64_t v
    cdef uint64_t b
    cdef Py_ssize_t i
    if avail >= 2:                       # fast paths: one or two bytes
        if p[0] < 0x80:
            v = p[0]
            r.pos += 1
            out[0] = <int64_t>((v >> 1) ^ ((<uint64_t>0) - (v & 1)))
            return 0
        if p[1] < 0x80:
            v = (p[0] & 0x7F) | (<uint64_t>p[1] << 7)
            r.pos += 2
            out[0] = <int64_t>((v >> 1) ^ ((<uint64_t>0) - (v & 1)))
            return 0
    v = 0
    i = 0
    while True:
        if i >= avail:
            return rd_fail_nogil(r, 0, i + 1)
        if i >= 10:
            return rd_fail_nogil(r, 1, 0)
        b = p[i]
        v |= (b & 0x7F) << (7 * i)
        i += 1
        if b < 0x80:
            break
    r.pos += i
    out[0] = <int64_t>((v >> 1) ^ ((<uint64_t>0) - (v & 1)))
    return 0


cdef inline int rd_skip(Reader* r, Py_ssize_t n) except -1 nogil:
    if n < 0:
        return rd_fail_nogil(r, 2, n)
    if r.end - r.pos < n:
        return rd_fail_nogil(r, 0, n)
    r.pos += n
    return 0


cdef inline const uint8_t* rd_bytes(Reader* r, Py_ssize_t n) except NULL nogil:
    """Pointer to the next n bytes (n >= 0), advancing past them."""
    cdef const uint8_t* p
    if n < 0:
        rd_fail_nogil(r, 2, n)
        return NULL
    if r.end - r.pos < n:
        rd_fail_nogil(r, 0, n)
        return NULL
    p = r.buf + r.pos
    r.pos += n
    return p
