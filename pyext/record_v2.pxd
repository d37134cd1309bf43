# The one parser of magic-v2 records, inline here so that both callers compile it into
# their loops: the object path (_Walker.read_record -> ConsumerRecord) and the Arrow path
# (arrow_fill_v2, which writes the fields straight into columns). A record (Kafka's
# DefaultRecord):
#
#   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
#   | keyLength varint | key | valueLength varint | value | headerCount varint
#   | [headerKeyLength varint | headerKey | headerValueLength varint | headerValue] ...
#
# Lengths of -1 are nulls (key, value, header value). Header bytes are always validated
# here; where they are is kept only by callers that hand headers out (RecView).
#
# v2_read is a fused (templated) function: one source, compiled once per output struct.
# The RecFields version has a single caller, the Arrow loop without headers, so the C
# compiler inlines all of it into that loop (the parser is too large to be inlined into
# several); the RecView version serves the object path and the Arrow path with headers.

ctypedef struct RecView:
    # One decoded record; pointers point into the record set or the decompressed batch.
    int64_t offset              # absolute offset
    int64_t timestamp           # ms (the batch's max timestamp under LogAppendTime)
    const uint8_t* key          # NULL when the key is null
    int32_t key_len             # -1 when null
    const uint8_t* value        # NULL when the value is null
    int32_t value_len           # -1 when null
    const uint8_t* headers      # start of the (validated) headers section
    Py_ssize_t headers_len      # its length in bytes
    int32_t header_count        # number of headers (0 for magic v0/v1)


ctypedef struct RecFields:
    # The fields every record has (RecView without the headers), for the Arrow loop.
    int64_t offset              # absolute offset
    int64_t timestamp           # ms
    const uint8_t* key          # NULL when the key is null
    int32_t key_len             # -1 when null
    const uint8_t* value        # NULL when the value is null
    int32_t value_len           # -1 when null


ctypedef fused RecOut:
    RecView
    RecFields


ctypedef struct V2Batch:
    # What the record parser needs of its batch header.
    int64_t base_offset         # baseOffset
    int64_t base_ts             # baseTimestamp
    int64_t max_ts              # maxTimestamp (every record's under LogAppendTime)
    bint log_append             # timestamp type LogAppendTime


cdef inline int v2_read(Reader* src, const V2Batch* b, RecOut* v) except -1 nogil:
    """The record at src's position into v, src moved past it. Faults name the record's
    offset once it is known (the batch's before)."""
    # a local copy of the reader: it stays in registers, whatever the stores into v alias
    cdef Reader rc = src[0]
    cdef Reader* r = &rc
    cdef int32_t length, odelta, klen, vlen, hcount, hk, hv, j
    cdef int64_t tdelta
    cdef Py_ssize_t at = r.pos, start, hstart
    cdef int64_t base = b.base_offset
    r.offset = base
    rd_varint(r, &length)
    rd_need(r, length)
    start = r.pos
    # record attributes, unused: skipped unchecked, as every later read checks the bounds
    # (signed, so a position past the end only fails them)
    r.pos += 1
    rd_varlong(r, &tdelta)
    rd_varint(r, &odelta)
    # unsigned arithmetic: a hostile delta wraps instead of being undefined
    v.offset = <int64_t>(<uint64_t>base + <uint64_t><int64_t>odelta)
    r.offset = v.offset
    rd_varint(r, &klen)
    if klen >= 0:
        v.key = rd_bytes(r, klen)
    elif klen == -1:
        v.key = NULL
    else:
        return rd_fault(r[0], F_LENGTH, klen, 0)
    rd_varint(r, &vlen)
    if vlen >= 0:
        v.value = rd_bytes(r, vlen)
    elif vlen == -1:
        v.value = NULL
    else:
        return rd_fault(r[0], F_LENGTH, vlen, 0)
    rd_varint(r, &hcount)
    hstart = r.pos
    if hcount != 0:
        if hcount < 0:
            return rd_fault(r[0], F_LENGTH, hcount, 0)
        for j in range(hcount):
            rd_varint(r, &hk)
            rd_skip(r, hk)
            rd_varint(r, &hv)
            if hv >= 0:
                rd_skip(r, hv)
            elif hv != -1:
                return rd_fault(r[0], F_LENGTH, hv, 0)
    if r.pos - start != length:
        hk = <int32_t>(r.pos - start)
        r.pos = at
        return rd_fault(r[0], F_RECORD_LENGTH, length, hk)
    if RecOut is RecView:
        v.headers = r.buf + hstart
        v.headers_len = r.pos - hstart
        v.header_count = hcount
    v.timestamp = (b.max_ts if b.log_append
                   else <int64_t>(<uint64_t>b.base_ts + <uint64_t>tdelta))
    v.key_len = klen
    v.value_len = vlen
    src.pos = r.pos
    return 0

