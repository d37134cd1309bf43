# --------------------------------------------------------------------------- batch headers

from crc32c import crc32c as _crc32c


cdef int batch_peek(const Reader* rs, int64_t* base, int32_t* length) except -1:
    cdef Reader p = rs[0]
    base[0] = -1
    length[0] = -1
    if rd_left(&p) < 8:
        return 0
    rd_i64(&p, base)
    if rd_left(&p) < 4:
        return 1
    rd_i32(&p, length)
    return 2


cdef int batch_magic(const Reader* b, int8_t* magic) except -1:
    cdef Reader p = b[0]
    rd_skip(&p, HEADER_UP_TO_MAGIC - 1)
    rd_i8(&p, magic)
    return 0


cdef inline int _read_v2_fields(Reader* b, BatchHeader* h) except -1:
    rd_i64(b, &h.base_offset)
    rd_i32(b, &h.length)
    rd_i32(b, &h.leader_epoch)
    rd_i8(b, &h.magic)
    rd_u32(b, &h.crc)
    rd_i16(b, &h.attributes)
    rd_i32(b, &h.last_offset_delta)
    rd_i64(b, &h.base_timestamp)
    rd_i64(b, &h.max_timestamp)
    rd_i64(b, &h.producer_id)
    rd_i16(b, &h.producer_epoch)
    rd_i32(b, &h.base_sequence)
    rd_i32(b, &h.count)
    return 0


cdef int batch_read_v2(Reader* b, BatchHeader* h, bint check_crc) except -1:
    """Java's DefaultRecordBatch.ensureValid, and a known codec. b spans exactly the batch
    (batchLength + 12 bytes); errors name the batch's base offset and first byte."""
    cdef Py_ssize_t at = b.pos, n
    cdef Reader covered
    cdef const uint8_t* p
    cdef int64_t base
    cdef int32_t length
    cdef uint32_t crc
    cdef int codec
    batch_peek(b, &base, &length)
    b.offset = base
    if length < V2_MIN_LENGTH:
        corrupt_at(b, f"Record batch length {length} is smaller than the minimum "
                      f"{V2_MIN_LENGTH}", at)
    _read_v2_fields(b, h)
    if check_crc:
        covered = b[0]
        covered.pos = at + V2_ATTRS_AT
        n = rd_left(&covered)
        p = rd_bytes(&covered, n)
        crc = _crc32c(PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ))
        if crc != h.crc:
            corrupt_at(b, f"Record batch CRC32C mismatch: stored {h.crc:#010x}, computed "
                          f"{crc:#010x}", at)
    if h.count < 0:
        corrupt_at(b, f"Invalid record count {h.count}", at)
    codec = h.attributes & ATTR_CODEC
    if codec > CODEC_ZSTD:
        corrupt_at(b, f"Unknown compression codec id {codec} in record batch", at,
                   UnsupportedCodecError)
    return 0
