# --------------------------------------------------------------------------- v2 records

v2_fast_enabled = True


def _set_v2_fast_path(bint enabled) -> None:
    """Tests only: False sends every v2 record through v2_careful, so that a test can check
    that both paths give the same records and the same errors."""
    global v2_fast_enabled
    v2_fast_enabled = enabled

cdef int v2_read(Reader* src, const V2Batch* b, RecView* v) except -1 nogil:
    """The record at src's position into v, src moved past it. Faults name the record's
    offset once it is known (the batch's before)."""
    cdef const uint8_t* q = NULL
    if v2_fast_enabled:
        q = v2_fast(src.buf + src.pos, src.buf + src.end, b, v)
    if q != NULL:
        src.pos = q - src.buf
        return 0
    return v2_careful(src, b, v)


cdef int v2_careful(Reader* src, const V2Batch* b, RecView* v) except -1 nogil:
    """v2_read (record_v2.pxd) through the bounds-checked reader: every record v2_fast
    does not take, and the one place a malformed record is described."""
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
    # errors name the record's offset, or the batch's when a hostile delta put it below
    r.offset = v.offset if v.offset >= base else base
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
    v.headers = r.buf + hstart
    v.headers_len = r.pos - hstart
    v.header_count = hcount
    v.timestamp = (b.max_ts if b.log_append
                   else <int64_t>(<uint64_t>b.base_ts + <uint64_t>tdelta))
    v.key_len = klen
    v.value_len = vlen
    src.pos = r.pos
    return 0

