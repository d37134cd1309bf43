# --------------------------------------------------------------------------- magic v0/v1

cdef int legacy_load(_Walker w, Reader* m, int magic) except -1:
    cdef Reader r = m[0]
    cdef Reader value
    cdef Py_ssize_t at = m.pos, size = rd_left(m), n, minsize
    cdef const uint8_t* p
    cdef int64_t base, ts = -1, ioff, last_rel
    cdef int32_t length, klen, vlen, isize, count
    cdef uint32_t stored, crc
    cdef int8_t attrs
    cdef int codec
    batch_peek(m, &base, &length)
    minsize = V1_MIN_SIZE if magic == 1 else V0_MIN_SIZE
    if length < minsize:
        corrupt_at(m, f"Message size {length} is smaller than the minimum {minsize} for "
                      f"magic {magic}", at)
    rd_skip(&r, LOG_OVERHEAD)
    rd_u32(&r, &stored)
    if w.check_crcs:
        n = rd_left(&r)
        p = rd_bytes(&r, n)
        crc = pyx_crc32(p, n)
        if crc != stored:
            corrupt_at(m, f"Message CRC32 mismatch: stored {stored:#010x}, computed "
                          f"{crc:#010x}", at)
        r.pos -= n
    rd_skip(&r, 1)                         # magic
    rd_i8(&r, &attrs)
    if magic == 1:
        rd_i64(&r, &ts)
    codec = attrs & ATTR_CODEC
    w.have_batch = True
    w.batch_next_offset = base + 1
    w.magic = magic
    w.base_offset = base
    w.epoch = -1
    w.legacy.log_append = magic == 1 and (attrs & ATTR_LOG_APPEND) != 0
    w.ts_type = -1 if magic == 0 else (1 if w.legacy.log_append else 0)
    w.legacy.wrapper_ts = ts
    w.remaining = 0
    if codec == CODEC_NONE:
        if base < w.next_fetch_offset:
            return 0
        w.legacy.inner = False
        w.region_owner = None
        w.rr = m[0]                        # the message is its own region
        w.remaining = 1
        return 1
    if codec > CODEC_LZ4:
        corrupt_at(m, f"Unknown compression codec id {codec} for a magic {magic} message", at,
                   UnsupportedCodecError)
    rd_i32(&r, &klen)
    if klen < -1:
        corrupt_at(&r, f"Invalid key length {klen}")
    if klen > 0:
        rd_skip(&r, klen)
    rd_i32(&r, &vlen)
    if vlen < 0:
        corrupt_at(m, "Compressed message has a null value", at)
    rd_sub(&r, &value, vlen)
    if rd_left(&r) != 0:
        corrupt_at(m, "Message size does not match its key and value lengths", at)
    n = w.inflater.inflate(codec, &value, magic == 0)
    w.region_owner = w.inflater.buf
    w.inflated_where.origin = w.batch_pos
    rd_init(&w.rr, <const uint8_t*><char*>w.inflater.buf, n, &w.inflated_where, base)
    # Walk the inner set's log headers: count the messages and find the last inner offset.
    count = 0
    last_rel = -1
    r = w.rr
    while rd_left(&r) > 0:
        rd_i64(&r, &ioff)
        rd_i32(&r, &isize)
        if isize < V0_MIN_SIZE:
            corrupt_at(&r, f"Inner message size {isize} is smaller than the minimum "
                           f"{V0_MIN_SIZE}", r.pos - LOG_OVERHEAD)
        rd_skip(&r, isize)
        last_rel = ioff
        count += 1
    if count == 0:
        return 0
    w.legacy.inner = True
    # v1 inner offsets are relative to (wrapper offset - last inner offset); like Java and
    # kafka-python, a negative base (a wrapper not offset-assigned by a broker) means the
    # inner offsets are taken as they are, which is also what v0 does.
    w.legacy.adjust = base - last_rel if magic == 1 else -1
    w.legacy.relative = w.legacy.adjust >= 0
    w.batch_next_offset = (base if w.legacy.relative else last_rel) + 1
    w.remaining = count
    return 1


cdef int legacy_read(Reader* r, const Legacy* s, int64_t base_offset, bint check_crcs,
                     RecView* v) except -1 nogil:
    cdef Reader m
    cdef Py_ssize_t at = r.pos, n
    cdef const uint8_t* p
    cdef int64_t off, ts = -1
    cdef int32_t size, klen, vlen
    cdef uint32_t stored, crc
    cdef int8_t magic, attrs
    r.offset = base_offset
    rd_i64(r, &off)
    rd_i32(r, &size)
    if size < V0_MIN_SIZE:
        with gil:
            corrupt_at(r, f"Message size {size} is smaller than the minimum {V0_MIN_SIZE}", at)
    rd_sub(r, &m, size)                    # the message's fields stay within its size
    rd_u32(&m, &stored)
    rd_i8(&m, &magic)
    rd_i8(&m, &attrs)
    if s.inner:
        if s.relative:
            off = s.adjust + off
        m.offset = off
        if magic != 0 and magic != 1:
            with gil:
                corrupt_at(&m, f"Inner message has magic {magic}", at)
        if attrs & ATTR_CODEC:
            with gil:
                corrupt_at(&m, "Compressed inner message inside a compressed wrapper", at)
        if check_crcs:
            m.pos -= 2
            n = rd_left(&m)
            p = rd_bytes(&m, n)
            crc = pyx_crc32(p, n)
            m.pos -= n - 2
            if crc != stored:
                with gil:
                    corrupt_at(&m, f"Message CRC32 mismatch: stored {stored:#010x}, computed "
                                   f"{crc:#010x}", at)
    m.offset = off
    if magic == 1:
        rd_i64(&m, &ts)
    v.offset = off
    v.timestamp = s.wrapper_ts if s.log_append else (ts if magic == 1 else -1)
    rd_i32(&m, &klen)
    if klen >= 0:
        v.key = rd_bytes(&m, klen)
    elif klen == -1:
        v.key = NULL
    else:
        return rd_fault(m, F_LENGTH, klen, 0)
    v.key_len = klen
    rd_i32(&m, &vlen)
    if vlen >= 0:
        v.value = rd_bytes(&m, vlen)
    elif vlen == -1:
        v.value = NULL
    else:
        return rd_fault(m, F_LENGTH, vlen, 0)
    v.value_len = vlen
    v.headers = NULL
    v.headers_len = 0
    v.header_count = 0
    if rd_left(&m) != 0:
        with gil:
            corrupt_at(&m, f"Message size {size} does not match its fields", at)
    return 0
