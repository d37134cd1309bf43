# --------------------------------------------------------------------------- Arrow

from libc.stdint cimport INT32_MAX

import pyarrow as pa


cdef object _SCHEMA = None
cdef object _SCHEMA_H = None
cdef object _HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()),
                                                 pa.field("value", pa.binary())]))
cdef object _TS_TYPE = pa.timestamp("us", tz="UTC")


def kafka_arrow_schema(bint include_headers=False):
    """Spark's Kafka source schema (all fields nullable), with the headers column if asked."""
    global _SCHEMA, _SCHEMA_H
    if _SCHEMA is None:
        fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()),
                  pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                  pa.field("offset", pa.int64()), pa.field("timestamp", _TS_TYPE),
                  pa.field("timestampType", pa.int32())]
        _SCHEMA = pa.schema(fields)
        _SCHEMA_H = pa.schema(fields + [pa.field("headers", _HEADERS_TYPE)])
    return _SCHEMA_H if include_headers else _SCHEMA


@cython.final
cdef class _ArrowBuilder:
    def __cinit__(self, Py_ssize_t rows, Py_ssize_t key_bytes, Py_ssize_t value_bytes,
                  bint include_headers):
        if rows < 16:
            rows = 16
        self.n = 0
        self.rows_target = rows
        self.include_headers = include_headers
        self.full = False
        self.offsets = _PBuf(rows * 8)
        self.timestamps = _PBuf(rows * 8)
        self.ts_types = _PBuf(rows * 4)
        self.key_valid = _PBuf(rows // 8 + 1, 0xFF)   # all valid until a null
        self.key_offs = _PBuf((rows + 1) * 4)
        self.key_data = _PBuf(key_bytes)
        self.val_valid = _PBuf(rows // 8 + 1, 0xFF)
        self.val_offs = _PBuf((rows + 1) * 4)
        self.val_data = _PBuf(value_bytes)
        (<int32_t*>self.key_offs.ptr)[0] = 0
        (<int32_t*>self.val_offs.ptr)[0] = 0
        self.key_used = self.val_used = self.key_nulls = self.val_nulls = 0
        self.need_key = self.need_val = 0
        self.plain_bytes = self.comp_bytes = 0
        self.reprojected = False
        self.h_nulls = self.h_count = self.hk_used = self.hv_used = self.hv_nulls = 0
        if include_headers:
            self.h_valid = _CBuf(True)
            self.h_offs = _CBuf()
            self.hk_offs = _CBuf()
            self.hk_data = _CBuf()
            self.hv_valid = _CBuf(True)
            self.hv_offs = _CBuf()
            self.hv_data = _CBuf()
            self.h_offs.ensure(4)
            self.hk_offs.ensure(4)
            self.hv_offs.ensure(4)
            (<int32_t*>self.h_offs.ptr)[0] = 0
            (<int32_t*>self.hk_offs.ptr)[0] = 0
            (<int32_t*>self.hv_offs.ptr)[0] = 0

    cdef int reserve(self, Py_ssize_t rows) except -1:
        """Room for `rows` more rows (and the data bytes a refused row asked for)."""
        cdef Py_ssize_t total = self.n + rows
        if not self.reprojected and self.comp_bytes == 0 and self.n > 0:
            self.reproject(1.0)        # uncompressed: size for the rest from the rows so far
        self.offsets.ensure(total * 8)
        self.timestamps.ensure(total * 8)
        self.ts_types.ensure(total * 4)
        self.key_valid.ensure(total // 8 + 1)
        self.val_valid.ensure(total // 8 + 1)
        self.key_offs.ensure((total + 1) * 4)
        self.val_offs.ensure((total + 1) * 4)
        if self.need_key or self.need_val:
            if self.n > 0 and self.rows_target > self.n:
                # grow once to the size projected from the rows written so far (compressed
                # batches: the upfront estimate is a guess), not by repeated x1.5 steps
                self.key_data.ensure_to(_projected(self.key_used, self.need_key, self.n,
                                                   self.rows_target))
                self.val_data.ensure_to(_projected(self.val_used, self.need_val, self.n,
                                                   self.rows_target))
            self.key_data.ensure(self.key_used + self.need_key)
            self.val_data.ensure(self.val_used + self.need_val)
        self.need_key = self.need_val = 0
        if self.include_headers:
            self.h_valid.ensure(total // 8 + 1)
            self.h_offs.ensure((total + 1) * 4)
        self.sync()
        return 0

    cdef int reproject(self, double ratio) except -1:
        """Once the first compressed batch is in: grow the key and value buffers to what the
        rows expected will need at the average row size seen so far, bounded by the
        uncompressed bytes ahead plus the compressed bytes ahead times the largest
        decompression ratio seen (x2). The upfront guess for compressed batches (3x their size) is
        often short (lz4/zstd/snappy 4-10x on typical payloads), and growing a nearly full
        100 MB buffer later copies all of it; growing now copies one batch."""
        cdef double bound, kp, vp
        self.reprojected = True
        if self.n <= 0 or self.rows_target <= self.n:
            return 0
        # 2x: later batches may compress better than the ones seen (zstd's first batch of a
        # set is often larger); the bound only has to stop a lying record count
        bound = self.plain_bytes + 2.0 * self.comp_bytes * ratio + 64
        kp = self.key_used * 1.03 * self.rows_target / self.n + 64
        vp = self.val_used * 1.03 * self.rows_target / self.n + 64
        if kp > bound:
            kp = bound
        if vp > bound:
            vp = bound
        if kp > INT32_MAX:
            kp = INT32_MAX
        if vp > INT32_MAX:
            vp = INT32_MAX
        self.key_data.regrow(<Py_ssize_t>kp, self.key_used)
        self.val_data.regrow(<Py_ssize_t>vp, self.val_used)
        self.sync()
        return 0

    cdef void sync(self) noexcept:
        # capacities seen by the row loops stop at 2 GiB so the int32 offset check fires
        # even when a buffer is larger
        self.p_off = <int64_t*>self.offsets.ptr
        self.p_ts = <int64_t*>self.timestamps.ptr
        self.p_tt = <int32_t*>self.ts_types.ptr
        self.p_kv = self.key_valid.ptr
        self.p_ko = <int32_t*>self.key_offs.ptr
        self.p_kd = self.key_data.ptr
        self.kd_cap = min(self.key_data.cap, <Py_ssize_t>INT32_MAX)
        self.p_vv = self.val_valid.ptr
        self.p_vo = <int32_t*>self.val_offs.ptr
        self.p_vd = self.val_data.ptr
        self.vd_cap = min(self.val_data.cap, <Py_ssize_t>INT32_MAX)

    cdef int add(self, const RecView* v, int32_t ts_type, const Reader* region) except -1 nogil:
        cdef Py_ssize_t i = self.n
        if ((v.key_len > 0 and self.key_used + v.key_len > INT32_MAX)
                or (v.value_len > 0 and self.val_used + v.value_len > INT32_MAX)):
            self.full = True     # Arrow binary offsets are int32: end this RecordBatch here
            return 0
        cdef Py_ssize_t ku = self.key_used, vu = self.val_used
        if ku + v.key_len > self.kd_cap or vu + v.value_len > self.vd_cap:
            self.need_key = v.key_len if v.key_len > 0 else 0
            self.need_val = v.value_len if v.value_len > 0 else 0
            return 2             # the caller grows the data buffers (needs the GIL) and retries
        self.p_off[i] = v.offset
        self.p_ts[i] = <int64_t>(<uint64_t>v.timestamp * 1000)
        self.p_tt[i] = ts_type
        if v.key_len >= 0:
            pyx_copy(self.p_kd + ku, v.key, v.key_len)
            ku += v.key_len
            self.key_used = ku
        else:
            clear_bit(self.p_kv, i)            # (validity bitmaps start all set)
            self.key_nulls += 1
        self.p_ko[i + 1] = <int32_t>ku
        if v.value_len >= 0:
            pyx_copy(self.p_vd + vu, v.value, v.value_len)
            vu += v.value_len
            self.val_used = vu
        else:
            clear_bit(self.p_vv, i)
            self.val_nulls += 1
        self.p_vo[i + 1] = <int32_t>vu
        if self.include_headers:
            self.add_headers(v, region)
        self.n = i + 1
        return 1

    cdef int add_headers(self, const RecView* v, const Reader* region) except -1 nogil:
        cdef Py_ssize_t i = self.n, j, h
        cdef Reader hr
        cdef int32_t klen, vlen
        cdef const uint8_t* p
        if v.header_count == 0:
            self.h_nulls += 1
            (<int32_t*>self.h_offs.ptr)[i + 1] = <int32_t>self.h_count
            return 0
        set_bit(self.h_valid.ptr, i)
        hr = region[0]                         # v's headers were validated by v2_read
        hr.pos = v.headers - region.buf
        hr.end = hr.pos + v.headers_len
        hr.offset = v.offset
        h = self.h_count + v.header_count
        self.hk_offs.ensure((h + 1) * 4)
        self.hv_offs.ensure((h + 1) * 4)
        self.hv_valid.ensure(h // 8 + 1)
        for j in range(v.header_count):
            rd_varint(&hr, &klen)
            p = rd_bytes(&hr, klen)
            self.hk_data.ensure(self.hk_used + 3 * klen)
            if pyx_utf8_valid(p, klen):
                if klen > 0:                   # (the buffer may still be NULL: no memcpy)
                    memcpy(self.hk_data.ptr + self.hk_used, p, klen)
                self.hk_used += klen
            else:
                self.hk_used += _utf8_replace(p, klen, self.hk_data.ptr + self.hk_used)
            (<int32_t*>self.hk_offs.ptr)[self.h_count + 1] = <int32_t>self.hk_used
            rd_varint(&hr, &vlen)
            if vlen >= 0:
                p = rd_bytes(&hr, vlen)
                self.hv_data.ensure(self.hv_used + vlen)
                if vlen > 0:                   # (the buffer may still be NULL: no memcpy)
                    memcpy(self.hv_data.ptr + self.hv_used, p, vlen)
                self.hv_used += vlen
                set_bit(self.hv_valid.ptr, self.h_count)
            else:
                self.hv_nulls += 1
            (<int32_t*>self.hv_offs.ptr)[self.h_count + 1] = <int32_t>self.hv_used
            self.h_count += 1
        if self.hk_used > INT32_MAX or self.hv_used > INT32_MAX or self.h_count > INT32_MAX:
            with gil:
                raise OverflowError("record headers exceed 2 GiB in one Arrow batch")
        (<int32_t*>self.h_offs.ptr)[i + 1] = <int32_t>self.h_count
        return 0

    cdef object finish(self, str topic, int32_t partition):
        return self.finish_segments([(topic, partition, self.n)])

    cdef object finish_segments(self, list segments):
        """The RecordBatch of the rows written, whose topic and partition columns hold
        segments[i] = (topic, partition, rows) one after another (their rows add up to n)."""
        cdef Py_ssize_t n = self.n, i, start, rows, tl, total = 0, done, pos
        cdef int32_t partition
        cdef bytes tb
        cdef list encoded = []
        for topic, partition, rows in segments:
            tb = (<str>topic).encode("utf-8")
            encoded.append(tb)
            total += rows * len(tb)
        if total > INT32_MAX:
            raise OverflowError(
                f"topic column of {n} rows ({total} bytes) exceeds Arrow's 2 GiB string limit")
        tofs = _PBuf((n + 1) * 4)
        pcol = _PBuf(n * 4)
        tdata = _PBuf(total)                   # from the block cache, like the other columns
        cdef int32_t* to = <int32_t*>tofs.ptr
        cdef int32_t* pc = <int32_t*>pcol.ptr
        cdef uint8_t* td = tdata.ptr
        start = pos = 0
        to[0] = 0
        for (topic, partition, rows), tb in zip(segments, encoded):
            tl = len(tb)
            for i in range(start, start + rows):
                to[i + 1] = <int32_t>(pos + (i - start + 1) * tl)
                pc[i] = partition
            if rows > 0 and tl > 0:            # the topic rows times: one copy, then doubling
                memcpy(td + pos, <const char*>tb, tl)
                done = tl
                while done < rows * tl:
                    memcpy(td + pos + done, td + pos, min(done, rows * tl - done))
                    done += min(done, rows * tl - done)
            start += rows
            pos += rows * tl
        key = pa.Array.from_buffers(
            pa.binary(), n,
            [self.key_valid.finish(n // 8 + 1) if self.key_nulls else None,
             self.key_offs.finish((n + 1) * 4), self.key_data.finish(self.key_used)],
            null_count=self.key_nulls)
        value = pa.Array.from_buffers(
            pa.binary(), n,
            [self.val_valid.finish(n // 8 + 1) if self.val_nulls else None,
             self.val_offs.finish((n + 1) * 4), self.val_data.finish(self.val_used)],
            null_count=self.val_nulls)
        cols = [key, value,
                pa.Array.from_buffers(pa.string(), n, [None, tofs.finish((n + 1) * 4),
                                                       tdata.finish(total)], null_count=0),
                pa.Array.from_buffers(pa.int32(), n, [None, pcol.finish(n * 4)], null_count=0),
                pa.Array.from_buffers(pa.int64(), n, [None, self.offsets.finish(n * 8)],
                                      null_count=0),
                pa.Array.from_buffers(_TS_TYPE, n, [None, self.timestamps.finish(n * 8)],
                                      null_count=0),
                pa.Array.from_buffers(pa.int32(), n, [None, self.ts_types.finish(n * 4)],
                                      null_count=0)]
        if self.include_headers:
            cols.append(self._headers_array())
        return pa.RecordBatch.from_arrays(cols, schema=kafka_arrow_schema(self.include_headers))

    def _headers_array(self):
        cdef Py_ssize_t n = self.n, h = self.h_count
        self.hk_offs.size = (h + 1) * 4
        self.hk_data.size = self.hk_used
        self.hv_offs.size = (h + 1) * 4
        self.hv_data.size = self.hv_used
        self.hv_valid.size = h // 8 + 1 if self.hv_valid.ptr != NULL else 0
        self.h_offs.size = (n + 1) * 4
        self.h_valid.size = n // 8 + 1
        keys = pa.Array.from_buffers(pa.string(), h, [None, pa.py_buffer(self.hk_offs),
                                                      pa.py_buffer(self.hk_data)], null_count=0)
        values = pa.Array.from_buffers(
            pa.binary(), h,
            [pa.py_buffer(self.hv_valid) if self.hv_nulls else None,
             pa.py_buffer(self.hv_offs), pa.py_buffer(self.hv_data)], null_count=self.hv_nulls)
        entries = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
        return pa.Array.from_buffers(
            _HEADERS_TYPE, n,
            [pa.py_buffer(self.h_valid) if self.h_nulls else None, pa.py_buffer(self.h_offs)],
            null_count=self.h_nulls, children=[entries])


cdef inline Py_ssize_t _projected(Py_ssize_t used, Py_ssize_t need, Py_ssize_t rows,
                                   Py_ssize_t rows_target) noexcept:
    """Bytes a column will need for rows_target rows at the average row size so far, capped
    at 4x what is known to be needed (row counts are untrusted) and at 2 GiB."""
    cdef double p = used + need + used * 1.03 * (rows_target - rows) / rows
    cdef double cap = 4.0 * (used + need) + 64
    if p > cap:
        p = cap
    if p > INT32_MAX:
        p = INT32_MAX
    if p < used + need:
        p = used + need
    return <Py_ssize_t>p


cdef Py_ssize_t _utf8_replace(const uint8_t* s, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """Copy s to out, replacing each maximal invalid subsequence by U+FFFD, as Python's
    bytes.decode("utf-8", "replace") does (the ConsumerRecord path); out has room for 3n."""
    cdef Py_ssize_t i = 0, o = 0, k, need
    cdef uint8_t c, b, lo, hi
    while i < n:
        c = s[i]
        if c < 0x80:
            out[o] = c
            o += 1
            i += 1
            continue
        lo = 0x80
        hi = 0xBF
        if 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            need = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            need = 0
        k = 1
        if need:
            while k <= need and i + k < n:
                b = s[i + k]
                if k == 1:
                    if b < lo or b > hi:
                        break
                elif b < 0x80 or b > 0xBF:
                    break
                k += 1
        if need and k == need + 1:
            memcpy(out + o, s + i, k)
            o += k
        else:
            out[o] = 0xEF
            out[o + 1] = 0xBF
            out[o + 2] = 0xBD
            o += 3
        i += k
    return o


# --------------------------------------------------------------------------- Arrow fill loops

cdef _ArrowBuilder arrow_builder_for(_Walker w, Py_ssize_t max_rows, bint include_headers):
    """A builder sized from the index's batches still ahead of w: rows from their counts, key
    and value bytes from their sizes (uncompressed: a bound; compressed: a guess). The data
    buffers start at the first batch's share of that; once it is in, reproject (from
    reserve) sizes them for the rest from its rows, instead of holding the loose bound."""
    cdef _Estimate e
    arrow_estimate(w, max_rows, &e)
    return _builder_from(&e, include_headers)


cdef _ArrowBuilder arrow_builder_many(list walkers, list budgets, bint include_headers):
    """A builder for takes of budgets[i] rows from each walkers[i] in turn: their estimates
    added up (the first batch's share is the first walker's)."""
    cdef _Estimate e, one
    cdef _Walker w
    e.rows = e.bytes = e.plain = e.comp = e.first_rows = e.first_bytes = 0
    for w, budget in zip(walkers, budgets):
        arrow_estimate(w, budget, &one)
        if e.first_rows == 0:
            e.first_rows = e.rows + one.first_rows
            e.first_bytes = e.bytes + one.first_bytes
        e.rows += one.rows
        e.bytes += one.bytes
        e.plain += one.plain
        e.comp += one.comp
    return _builder_from(&e, include_headers)


cdef _ArrowBuilder _builder_from(_Estimate* e, bint include_headers):
    cdef Py_ssize_t key_est = min(e.bytes, e.rows * 16), val_est = e.bytes
    cdef _ArrowBuilder b
    if e.comp == 0 and e.first_rows < e.rows and e.first_bytes < e.bytes:
        # uncompressed: the bound counts keys in both columns and every record's overhead
        # past 7 bytes (2x the values of 10-byte records); start at the first batch's
        key_est = min(key_est, e.first_bytes + 64)
        val_est = e.first_bytes + 64
    b = _ArrowBuilder(e.rows, key_est, val_est, include_headers)
    b.plain_bytes = e.plain
    b.comp_bytes = e.comp
    return b


cdef int arrow_estimate(_Walker w, Py_ssize_t max_rows, _Estimate* out) except -1:
    """Rows and bytes a take of up to max_rows from w may need, from the index's batches."""
    cdef Py_ssize_t rows_est = 0, bytes_est = 0, plain_est = 0, comp_est = 0, payload
    cdef Py_ssize_t first_rows = 0, first_bytes = 0
    cdef RecordSetIndex idx = w.get_index()
    cdef Py_ssize_t k = idx.find(w.origin + w.rs.pos), limit = w.origin + w.rs.end
    cdef const BatchEntry* e
    if w.remaining > 0:
        rows_est = first_rows = w.remaining
        bytes_est = first_bytes = rd_left(&w.rr)
        plain_est = bytes_est                  # already decompressed when compressed
    while rows_est < max_rows and 0 <= k < idx.n:
        e = &idx.entries[k]
        if e.magic != 2 or e.start + e.size > limit:
            break
        payload = e.size - LOG_OVERHEAD - V2_MIN_LENGTH
        if e.count < 0:
            break
        if e.attributes & ATTR_CODEC == CODEC_NONE:
            if e.count > payload // V2_MIN_RECORD:
                break
            rows_est += e.count
            bytes_est += payload - e.count * V2_MIN_RECORD
            plain_est += payload - e.count * V2_MIN_RECORD
        else:                                  # a guess (never trusting count): buffers grow
            rows_est += min(e.count, payload // 2)
            bytes_est += payload * 3
            comp_est += payload
        if first_rows == 0:
            first_rows = rows_est
            first_bytes = bytes_est
        k += 1
    if rows_est > max_rows:
        bytes_est = <Py_ssize_t>(bytes_est * (<double>max_rows / rows_est))
        rows_est = max_rows
    out.rows = rows_est
    out.bytes = bytes_est
    out.plain = plain_est
    out.comp = comp_est
    out.first_rows = first_rows
    out.first_bytes = first_bytes
    return 0


cdef int arrow_fill(_Walker w, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil:
    """Rows from w's current batch, any magic, headers too: 1 batch done or max_rows,
    0 the builder is full (2 GiB), 2 its data buffers must grow first (needs the GIL)."""
    cdef RecView v
    cdef int r
    while w.remaining > 0 and b.n < max_rows:
        if w.read_record(&v):
            r = b.add(&v, w.ts_type, &w.rr)
            if r != 1:
                w.undo()               # full (2 GiB) or the data buffers must grow first
                return r
    return 1


cdef int arrow_fill_v2(_Walker w, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil:
    """arrow_fill for a magic-2 batch without the headers column: parse (v2_fast) and write
    in one loop, the cursor and the column state in locals. Nothing of that loop's state has
    its address taken (a record v2_fast does not take goes through copies, to v2_careful),
    so the C compiler can keep it in registers."""
    cdef const uint8_t* q = w.rr.buf + w.rr.pos
    cdef const uint8_t* e = w.rr.buf + w.rr.end
    cdef const uint8_t* nq
    cdef Reader rl                             # for v2_careful and the end check only
    cdef V2Batch hdr = w.v2
    cdef RecFields v
    cdef RecView vc
    cdef int32_t remaining = w.remaining, ts_type = w.ts_type
    cdef int64_t nfo = w.next_fetch_offset, base_off = w.base_offset
    cdef Py_ssize_t n = b.n, n0 = b.n, ku = b.key_used, vu = b.val_used
    cdef Py_ssize_t kcap = b.kd_cap, vcap = b.vd_cap, knull = 0, vnull = 0
    cdef int64_t* p_off = b.p_off
    cdef int64_t* p_ts = b.p_ts
    cdef int32_t* p_tt = b.p_tt
    cdef uint8_t* p_kv = b.p_kv
    cdef int32_t* p_ko = b.p_ko
    cdef uint8_t* p_kd = b.p_kd
    cdef uint8_t* p_vv = b.p_vv
    cdef int32_t* p_vo = b.p_vo
    cdef uint8_t* p_vd = b.p_vd
    cdef int result = 1
    cdef bint fast = v2_fast_enabled
    while remaining > 0 and n < max_rows:
        nq = v2_fast(q, e, &hdr, &v) if fast else NULL
        if nq == NULL:
            rl = w.rr
            rl.pos = q - rl.buf
            v2_careful(&rl, &w.v2, &vc)
            v.offset = vc.offset
            v.timestamp = vc.timestamp
            v.key = vc.key
            v.key_len = vc.key_len
            v.value = vc.value
            v.value_len = vc.value_len
            nq = rl.buf + rl.pos
        if remaining == 1 and nq != e:
            rl = w.rr
            rl.pos = nq - rl.buf
            batch_check_end(&rl, base_off)
        if v.offset < nfo:
            remaining -= 1
            q = nq
            continue                           # below the fetch position
        if ku + v.key_len > kcap or vu + v.value_len > vcap:
            # not taken (q stays at the record): grow, or end the Arrow batch, first
            if ku + v.key_len > INT32_MAX or vu + v.value_len > INT32_MAX:
                b.full = True
                result = 0
            else:
                b.need_key = v.key_len if v.key_len > 0 else 0
                b.need_val = v.value_len if v.value_len > 0 else 0
                result = 2
            break
        q = nq
        remaining -= 1
        p_off[n] = v.offset
        p_ts[n] = <int64_t>(<uint64_t>v.timestamp * 1000)
        p_tt[n] = ts_type
        # validity bitmaps start all set (_PBuf ones): only a null clears its bit
        if v.key_len >= 0:
            pyx_copy(p_kd + ku, v.key, v.key_len)
            ku += v.key_len
        else:
            clear_bit(p_kv, n)
            knull += 1
        p_ko[n + 1] = <int32_t>ku
        if v.value_len >= 0:
            pyx_copy(p_vd + vu, v.value, v.value_len)
            vu += v.value_len
        else:
            clear_bit(p_vv, n)
            vnull += 1
        p_vo[n + 1] = <int32_t>vu
        nfo = v.offset + 1
        n += 1
    w.took(q - w.rr.buf, remaining, nfo, n > n0)
    b.n = n
    b.key_used = ku
    b.val_used = vu
    b.key_nulls += knull
    b.val_nulls += vnull
    return result
