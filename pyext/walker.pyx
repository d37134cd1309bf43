# --------------------------------------------------------------------------- the walker

from cpython.buffer cimport (PyBUF_SIMPLE, PyBuffer_IsContiguous, PyBuffer_Release,
                             PyObject_GetBuffer)
from cpython.bytearray cimport PyByteArray_Check
from cpython.bytes cimport PyBytes_Check
from cpython.memoryview cimport PyMemoryView_Check, PyMemoryView_GET_BUFFER

cdef extern from "Python.h":
    # Py_buffer with ``obj`` as a raw pointer: a memoryview's may be NULL
    ctypedef struct _RawBuffer "Py_buffer":
        void* buf
        PyObject* obj
        Py_ssize_t len


def _aborted_entry(t):
    """(first_offset, producer_id) from a (producer_id, first_offset) pair or an object with
    producer_id / first_offset attributes (a FetchResponse AbortedTransaction)."""
    if hasattr(t, "producer_id"):
        return (int(t.first_offset), int(t.producer_id))
    pid, first = t
    return (int(first), int(pid))


@cython.final
cdef class _Walker:
    def __cinit__(self, object record_set, str topic, int32_t partition, int64_t fetch_offset,
                  bint check_crcs, str isolation_level, object aborted_transactions):
        cdef _RawBuffer* mv
        cdef const uint8_t* data = NULL
        cdef Py_ssize_t length = 0
        self.has_view = False
        if record_set is None:
            record_set = b""
        if PyMemoryView_Check(record_set):
            mv = <_RawBuffer*>PyMemoryView_GET_BUFFER(record_set)
            if (mv.obj != NULL and (PyByteArray_Check(<object>mv.obj) or PyBytes_Check(<object>mv.obj))
                    and PyBuffer_IsContiguous(<Py_buffer*>mv, b'C')):
                # A slice of a bytes/bytearray (a Fetch response frame): hold an export of
                # that object, not of the memoryview. CPython's GC may tp_clear a memoryview
                # that still has exports (3.11 drops its managed buffer anyway) and then
                # crash when the memoryview is freed after we release our export.
                PyObject_GetBuffer(<object>mv.obj, &self.view, PyBUF_SIMPLE)
                self.has_view = True
                self.owner = <object>mv.obj
                data = <const uint8_t*>mv.buf
                length = mv.len
        if not self.has_view:
            PyObject_GetBuffer(record_set, &self.view, PyBUF_SIMPLE)
            self.has_view = True
            self.owner = record_set
            data = <const uint8_t*>self.view.buf
            length = self.view.len
        self.topic = topic
        self.partition = partition
        self.set_where.topic = <PyObject*>self.topic
        self.set_where.partition = partition
        self.set_where.origin = 0
        self.set_where.inflated = False
        self.inflated_where = self.set_where
        self.inflated_where.inflated = True
        rd_init(&self.rs, data if data != NULL else <const uint8_t*>"", length,
                &self.set_where, -1)
        self.batch_pos = 0
        self.partition_obj = partition
        self.ts_obj = None
        self.ts_val = 0
        self.check_crcs = check_crcs
        if isolation_level == "read_committed":
            self.read_committed = True
        elif isolation_level == "read_uncommitted":
            self.read_committed = False
        else:
            raise ValueError(f"isolation_level must be 'read_uncommitted' or 'read_committed', "
                             f"got {isolation_level!r}")
        # Java: a priority queue by first offset; a sorted list consumed from the front.
        self.aborted = sorted(_aborted_entry(t) for t in (aborted_transactions or ()))
        self.aborted_idx = 0
        self.aborted_pids = set()
        self.next_fetch_offset = fetch_offset
        self.last_epoch = -1
        self.have_batch = False
        self.batch_next_offset = -1
        self.finished = False
        self.open_end = False
        self.error = None
        self.cut_offset = -1
        self.cut_size = -1
        self.cut_have = 0
        self.remaining = 0
        self.epoch = -1
        self.ts_type = -1
        self.region_owner = None
        self.inflater = _Inflater()
        self.legacy.inner = False
        rd_init(&self.rr, <const uint8_t*>"", 0, &self.set_where, -1)
        self.index = None
        self.origin = 0

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False

    # ---------------------------------------------------------------- batches

    cdef int load_batch(self) except -1:
        cdef Reader b
        cdef Py_ssize_t left, size
        cdef int64_t base
        cdef int32_t length
        cdef int known
        cdef int8_t magic
        while True:
            left = rd_left(&self.rs)
            if left <= 0:
                return 0
            known = batch_peek(&self.rs, &base, &length)
            if known < 2:
                # a partial trailing log header: the size is unknown
                self._incomplete(base, -1, left)
                return 0
            self.batch_pos = self.rs.pos
            if length < HEADER_UP_TO_MAGIC - LOG_OVERHEAD:
                self.rs.offset = base
                corrupt_at(&self.rs, f"Invalid batch length {length}")
            size = LOG_OVERHEAD + <Py_ssize_t>length
            if size > left:
                # partial trailing batch (a fetch size limit, or a log cut mid-batch)
                self._incomplete(base, size, left)
                return 0
            rd_sub(&self.rs, &b, size)
            b.offset = base
            batch_magic(&b, &magic)
            if magic == 2:
                if self._load_v2(&b):
                    return 1
            elif magic == 0 or magic == 1:
                if legacy_load(self, &b, magic):
                    return 1
            else:
                corrupt_at(&b, f"Unknown record batch magic {magic}")

    cdef int _load_v2(self, Reader* b) except -1:
        cdef BatchHeader h
        cdef int64_t last_offset
        cdef int codec
        # a batch a decode thread already checked (RecordSetIndex.verify_crcs) is not
        # checked again; any other is checked here, its error raised here
        batch_read_v2(b, &h, self.check_crcs and not (
            self.index is not None and self.index.crc_ok(self.origin + self.batch_pos)))
        last_offset = h.base_offset + h.last_offset_delta
        codec = h.attributes & ATTR_CODEC
        self.have_batch = True
        self.batch_next_offset = last_offset + 1
        self.magic = 2
        self.base_offset = h.base_offset
        self.v2.base_offset = h.base_offset
        self.v2.base_ts = h.base_timestamp
        self.v2.max_ts = h.max_timestamp
        self.v2.log_append = (h.attributes & ATTR_LOG_APPEND) != 0
        self.epoch = h.leader_epoch if h.leader_epoch >= 0 else -1
        self.ts_type = 1 if self.v2.log_append else 0
        self.remaining = 0
        if self.read_committed and h.producer_id >= 0:
            # Java CompletedFetch: activate aborted transactions starting at or before this
            # batch's last offset, then honour markers / drop aborted batches.
            while (self.aborted_idx < len(self.aborted)
                   and self.aborted[self.aborted_idx][0] <= last_offset):
                self.aborted_pids.add(self.aborted[self.aborted_idx][1])
                self.aborted_idx += 1
            if h.attributes & ATTR_CONTROL:
                if h.count > 0:
                    self._load_region(b, h.count, codec)
                    if self.is_abort_marker():
                        self.aborted_pids.discard(h.producer_id)
            elif (h.attributes & ATTR_TXN) and h.producer_id in self.aborted_pids:
                self.remaining = 0
                if self.batch_next_offset > self.next_fetch_offset:
                    self.next_fetch_offset = self.batch_next_offset
                return 0
        if h.attributes & ATTR_CONTROL:
            # control records are never handed out; they still advance the position
            self.remaining = 0
            if self.batch_next_offset > self.next_fetch_offset:
                self.next_fetch_offset = self.batch_next_offset
            return 0
        if h.count == 0:
            return 0
        # a batch is not skipped on its header's word (lastOffsetDelta) that it lies below the
        # fetch offset: its records are read and those below skipped one by one, as Java does,
        # so a batch whose records run past lastOffsetDelta loses none of them
        self._load_region(b, h.count, codec)
        return 1

    cdef void _incomplete(self, int64_t offset, Py_ssize_t size, Py_ssize_t have) noexcept:
        self.cut_offset = offset
        self.cut_size = size
        self.cut_have = have

    cdef int _load_region(self, Reader* records, int32_t count, int codec) except -1:
        cdef Py_ssize_t n
        if codec == CODEC_NONE:
            self.region_owner = None
            self.rr = records[0]
        else:
            n = self.inflater.inflate(codec, records, False)
            self.region_owner = self.inflater.buf
            self.inflated_where.origin = self.batch_pos
            rd_init(&self.rr, <const uint8_t*><char*>self.inflater.buf, n,
                    &self.inflated_where, self.base_offset)
        n = rd_left(&self.rr)
        if <Py_ssize_t>count > n // V2_MIN_RECORD:
            corrupt(self.topic, self.partition, self.base_offset,
                    f"Record count {count} cannot fit in {n} bytes of records", self.batch_pos)
        self.remaining = count
        return 0

    cdef int is_abort_marker(self) except -1:
        cdef RecView v
        cdef Reader r = self.rr                # a copy: the records are read again later
        cdef Reader key
        cdef Py_ssize_t at = r.pos
        cdef int16_t version, ctype
        v2_read(&r, &self.v2, &v)
        if v.key_len < 4:
            corrupt_at(&r, "Control record key shorter than 4 bytes", at)
        # the key: version int16, type int16 (ControlRecordType ABORT = 0, COMMIT = 1)
        key = r
        key.pos = v.key - r.buf
        key.end = key.pos + v.key_len
        rd_i16(&key, &version)
        rd_i16(&key, &ctype)
        return 1 if ctype == 0 else 0

    cdef int advance(self) except -1:
        if self.finished:
            return 0
        if self.load_batch():
            return 1
        if (self.have_batch and self.batch_next_offset > self.next_fetch_offset
                and not self.open_end):
            self.next_fetch_offset = self.batch_next_offset   # compaction gap / control at end
        self.finished = True
        self.release()
        return 0

    cdef void release(self) noexcept:
        self.region_owner = None
        self.inflater.buf = None

    cdef void drop(self) noexcept:
        self.finished = True
        self.remaining = 0
        self.release()

    # ---------------------------------------------------------------- the index, parts

    cdef RecordSetIndex get_index(self):
        if self.index is None:
            self.index = RecordSetIndex.__new__(RecordSetIndex)
            self.index.fetch_offset = self.next_fetch_offset
            self.index.build(self.rs.buf, self.rs.end)
            self.origin = 0
        return self.index

    cdef int use_index(self, RecordSetIndex index) except -1:
        if index.size != self.rs.end:
            raise ValueError(f"the index is of a record set of {index.size} bytes, not of "
                             f"this one ({self.rs.end} bytes)")
        self.index = index
        self.origin = 0
        return 0

    cdef list split(self, Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes):
        cdef RecordSetIndex idx
        cdef list cuts
        cdef list out = []
        cdef _Walker part
        cdef Py_ssize_t at, lo, hi
        if (parts < 2 or self.finished or self.error is not None
                or (self.read_committed and self.aborted)):
            return None
        idx = self.get_index()
        cuts = idx.cuts(self.origin + self.rs.pos, self.origin + self.rs.end,
                        self.next_fetch_offset, max_records, parts, head, min_bytes)
        if cuts is None:
            return None
        # the record set may be a slice of its owner (a response frame): cut the owner
        at = <const uint8_t*>self.rs.buf - <const uint8_t*>self.view.buf
        view = memoryview(self.owner)
        lo = self.rs.pos
        for c in cuts:
            hi = <Py_ssize_t>c - self.origin
            part = _Walker(view[at + lo:at + hi], self.topic, self.partition,
                           self.next_fetch_offset, self.check_crcs,
                           "read_committed" if self.read_committed else "read_uncommitted",
                           None)
            part.open_end = True               # this walker decides where its end leaves us
            part.index = idx
            part.origin = self.origin + lo
            out.append(part)
            lo = hi
        return out

    cdef int absorb(self, _Walker part, bint rows) except -1:
        # where taking the part's batches here would have left this walker (parts are
        # absorbed in order, each taken to its end)
        if rows:
            self.last_epoch = part.last_epoch
        if part.next_fetch_offset > self.next_fetch_offset:
            self.next_fetch_offset = part.next_fetch_offset
        self.rs.pos += part.rs.end             # the parts cover the batches cut, in order
        self.have_batch = True
        self.batch_next_offset = part.batch_next_offset
        return 0

    cdef int maybe_finish(self) except -1:
        """Finish now if the current batch is used up and no complete batch follows; never
        while an error is pending (the position must stay before the bad data)."""
        cdef int64_t base
        cdef int32_t length
        if self.finished or self.remaining > 0 or self.error is not None:
            return 0
        if batch_peek(&self.rs, &base, &length) == 2:
            if (length < HEADER_UP_TO_MAGIC - LOG_OVERHEAD
                    or LOG_OVERHEAD + <Py_ssize_t>length <= rd_left(&self.rs)):
                return 0                       # a batch follows (or corruption to report)
        self.advance()
        return 1

    # ---------------------------------------------------------------- records

    cdef int read_record(self, RecView* v) except -1 nogil:
        self.undo_pos = self.rr.pos
        self.undo_remaining = self.remaining
        self.undo_nfo = self.next_fetch_offset
        self.undo_epoch = self.last_epoch
        if self.magic == 2:
            v2_read(&self.rr, &self.v2, v)
        else:
            legacy_read(&self.rr, &self.legacy, self.base_offset, self.check_crcs, v)
        self.remaining -= 1
        if self.remaining == 0:
            batch_check_end(&self.rr, self.base_offset)
        if v.offset < self.next_fetch_offset:
            return 0                           # below the fetch position (fetch began mid-batch)
        self.next_fetch_offset = v.offset + 1
        self.last_epoch = self.epoch
        return 1

    cdef void undo(self) noexcept nogil:
        self.rr.pos = self.undo_pos
        self.remaining = self.undo_remaining
        self.next_fetch_offset = self.undo_nfo
        self.last_epoch = self.undo_epoch

    cdef void took(self, Py_ssize_t pos, int32_t remaining, int64_t next_offset,
                   bint rows) noexcept nogil:
        """The current batch read up to pos with remaining records left, the position at
        next_offset; rows: some were handed out (they carry this batch's epoch)."""
        self.rr.pos = pos
        self.remaining = remaining
        self.next_fetch_offset = next_offset
        if rows:
            self.last_epoch = self.epoch

    cdef list take_records(self, Py_ssize_t max_records, object key_des, object value_des):
        cdef list out = []
        cdef bint des = key_des is not None or value_des is not None
        if self.error is not None:
            raise self.error
        try:
            self._take_records(out, max_records, key_des, value_des, des)
        except CorruptRecordError as e:
            # Hand out what was read before the bad data; the error comes with the next take
            # and the position stays right after the last record handed out.
            self.error = e
            if out:
                return out
            raise
        self.maybe_finish()
        return out

    cdef int _take_records(self, list out, Py_ssize_t max_records, object key_des,
                           object value_des, bint des) except -1:
        cdef RecView v
        cdef ConsumerRecord rec
        while len(out) < max_records:
            if self.remaining == 0:
                if not self.advance():
                    break
                continue
            if self.magic == 2 and not des:
                records_fill_v2(self, out, max_records)
                continue
            if not self.read_record(&v):
                continue
            rec = make_record(self, &v, not des)
            if des:
                stage = "key"
                try:
                    if key_des is not None:
                        rec.key = key_des(rec.key)
                    stage = "value"
                    if value_des is not None:
                        rec.value = value_des(rec.value)
                except Exception as e:
                    self.undo()                # the position stays at the failing record
                    if out:
                        return 0               # hand out what we have; the next take raises
                    raise RecordDeserializationError(
                        f"Error deserializing the {stage} of the record at offset {v.offset}: "
                        f"{e!r}", topic=self.topic, partition=self.partition,
                        offset=v.offset) from e
            out.append(rec)
        return 0

    cdef object take_arrow(self, Py_ssize_t max_rows, bint include_headers):
        cdef _ArrowBuilder b = arrow_builder_for(self, max_rows, include_headers)
        if self.error is not None:
            raise self.error
        try:
            self._take_arrow(b, max_rows, include_headers)
        except CorruptRecordError as e:
            self.error = e                     # as in take_records: rows first, error next
            if b.n == 0:
                raise
        else:
            self.maybe_finish()
        return b.finish(self.topic, self.partition)

    cdef int take_arrow_into(self, _ArrowBuilder b, Py_ssize_t max_rows,
                             bint include_headers) except -1:
        """take_arrow's rows written into a builder shared with other walkers (up to b.n ==
        max_rows): 1 when the take ended cleanly, 0 when it stopped at an error, kept in
        self.error for the next take (rows before it are in b, as take_arrow hands them out
        first)."""
        if self.error is not None:
            return 0
        try:
            self._take_arrow(b, max_rows, include_headers)
            self.maybe_finish()
        except CorruptRecordError as e:
            self.error = e
            return 0
        return 1

    cdef int _take_arrow(self, _ArrowBuilder b, Py_ssize_t max_rows,
                         bint include_headers) except -1:
        while b.n < max_rows and not b.full:
            if self.remaining == 0:
                if not self.advance():
                    break
                continue
            b.reserve(min(<Py_ssize_t>self.remaining, max_rows - b.n))
            if self.magic == 2 and not include_headers:
                with nogil:
                    arrow_fill_v2(self, b, max_rows)
            else:
                with nogil:
                    arrow_fill(self, b, max_rows)
            if (not b.reprojected and b.comp_bytes > 0 and self.remaining == 0
                    and self.region_owner is not None and b.n > 0):
                b.reproject(self.inflater.ratio)
        return 0
