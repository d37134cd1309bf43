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
# v2_read takes a well-formed record in one pass of plain loads (v2_fast): a bounds check
# per length (the record's against the region, each key / value / header against the
# record's end), the region's V2_SLACK bytes past the record covering its unchecked varint
# reads. Whatever it does not take (a varint longer than 3 bytes, a record within V2_SLACK
# bytes of the region's end, anything malformed) goes to v2_careful (record_v2.pyx, out of
# line): the same parse through the bounds-checked reader, which raises the one
# CorruptRecordError naming what is wrong. For every record v2_fast takes both give the
# same fields (tests/fuzz/test_records_fuzz.py compares them).

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
    # RecView without the headers, for the Arrow loop without the headers column.
    int64_t offset
    int64_t timestamp
    const uint8_t* key
    int32_t key_len
    const uint8_t* value
    int32_t value_len


ctypedef struct RecTaken:
    # RecView's fields again, for the object loop (record.pyx records_fill_v2): a type of its
    # own, so that v2_fast's copy for it has that loop as its one caller
    int64_t offset
    int64_t timestamp
    const uint8_t* key
    int32_t key_len
    const uint8_t* value
    int32_t value_len
    const uint8_t* headers
    Py_ssize_t headers_len
    int32_t header_count


ctypedef fused RecOut:
    # v2_fast is compiled once per output struct: the RecFields and RecTaken copies each
    # have a single caller (the Arrow loop, the object loop), which the C compiler then
    # inlines whole into that loop
    RecView
    RecFields
    RecTaken


ctypedef struct V2Batch:
    # What the record parser needs of its batch header.
    int64_t base_offset         # baseOffset
    int64_t base_ts             # baseTimestamp
    int64_t max_ts              # maxTimestamp (every record's under LogAppendTime)
    bint log_append             # timestamp type LogAppendTime


cdef enum:
    # Region bytes v2_fast needs after a record: its unchecked reads run past the end of a
    # malformed record by at most 16 bytes before a check sends the record to v2_careful
    # (the attribute byte and up to five 3-byte varints in a row without a check between).
    V2_SLACK = 32


cdef int v2_careful(Reader* src, const V2Batch* b, RecView* v) except -1 nogil
    # v2_read through the bounds-checked reader (record_v2.pyx), for what v2_fast leaves
cdef bint v2_fast_enabled
    # False: every record goes to v2_careful (_set_v2_fast_path, for the tests that check
    # both paths agree)


cdef inline const uint8_t* _uv21(const uint8_t* q, uint32_t* out) noexcept nogil:
    """The unsigned varint at q if it has at most 3 bytes (3 readable bytes assumed): the
    byte after it; NULL when it is longer (v2_careful reads those)."""
    cdef uint32_t c0 = q[0], c1, c2
    if c0 < 0x80:
        out[0] = c0
        return q + 1
    c1 = q[1]
    if c1 < 0x80:
        out[0] = (c0 & 0x7F) | (c1 << 7)
        return q + 2
    c2 = q[2]
    if c2 < 0x80:
        out[0] = (c0 & 0x7F) | ((c1 & 0x7F) << 7) | (c2 << 14)
        return q + 3
    return NULL


cdef inline int32_t _zz32(uint32_t u) noexcept nogil:
    # zig-zag (values of at most 21 bits here, so int32 and int64 fields decode alike)
    return <int32_t>((u >> 1) ^ ((<uint32_t>0) - (u & 1)))


cdef inline const uint8_t* v2_fast(const uint8_t* q, const uint8_t* e, const V2Batch* b,
                                   RecOut* v) noexcept nogil:
    """The record at q (region end e) into v: the byte after it, or NULL (v untouched)
    when the record is not one this path takes. A pointer in and out, so that a caller's
    loop can keep its cursor in a register."""
    cdef const uint8_t* rec_end
    cdef const uint8_t* key
    cdef const uint8_t* value
    cdef const uint8_t* hstart
    cdef uint32_t u
    cdef int32_t length, odelta, tdelta, klen, vlen, hcount, hk, hv, j
    if e - q < V2_SLACK:
        return NULL
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    length = _zz32(u)
    # the record and V2_SLACK bytes after it lie in the region
    if length < 0 or <Py_ssize_t>length > (e - q) - V2_SLACK:
        return NULL
    rec_end = q + length
    q += 1                                     # attributes (unused)
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    tdelta = _zz32(u)
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    odelta = _zz32(u)
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    klen = _zz32(u)
    key = q
    if klen >= 0:
        if klen > rec_end - q:                 # (also when q already passed rec_end)
            return NULL
        q += klen
    elif klen == -1:
        key = NULL
    else:
        return NULL
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    vlen = _zz32(u)
    value = q
    if vlen >= 0:
        if vlen > rec_end - q:
            return NULL
        q += vlen
    elif vlen == -1:
        value = NULL
    else:
        return NULL
    q = _uv21(q, &u)
    if q == NULL:
        return NULL
    hcount = _zz32(u)
    hstart = q
    if hcount != 0:
        if hcount < 0:
            return NULL
        for j in range(hcount):
            if q >= rec_end:                   # (bounds the loop by the record's bytes)
                return NULL
            q = _uv21(q, &u)
            if q == NULL:
                return NULL
            hk = _zz32(u)
            if hk < 0 or hk > rec_end - q:
                return NULL
            q += hk
            q = _uv21(q, &u)
            if q == NULL:
                return NULL
            hv = _zz32(u)
            if hv >= 0:
                if hv > rec_end - q:
                    return NULL
                q += hv
            elif hv != -1:
                return NULL
    if q != rec_end:
        return NULL
    # unsigned arithmetic: a hostile delta wraps instead of being undefined
    v.offset = <int64_t>(<uint64_t>b.base_offset + <uint64_t><int64_t>odelta)
    v.timestamp = (b.max_ts if b.log_append
                   else <int64_t>(<uint64_t>b.base_ts + <uint64_t><int64_t>tdelta))
    v.key = key
    v.key_len = klen
    v.value = value
    v.value_len = vlen
    if RecOut is RecView or RecOut is RecTaken:
        v.headers = hstart
        v.headers_len = q - hstart
        v.header_count = hcount
    return q


cdef int v2_read(Reader* src, const V2Batch* b, RecView* v) except -1 nogil
    # the record at src's position into v, src moved past it (record_v2.pyx): v2_fast, else
    # v2_careful. A function of its own, so that v2_fast's RecView copy has this one caller
    # and is compiled inline into it
