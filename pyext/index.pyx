# --------------------------------------------------------------------------- the index

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdlib cimport calloc, free, realloc

pyx_crc32c_init()                              # tables, and whether the CPU has crc32


def crc32c_checksum(data, bint tables=False):
    """CRC32C of ``data`` as verify_crcs computes it (tests: ``tables`` forces the table
    path on a CPU with the crc32 instruction)."""
    cdef Py_buffer view
    cdef uint32_t crc
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if tables:
            pyx_crc32c_use_hw(0)
        crc = pyx_crc32c(<const uint8_t*>view.buf, view.len)
    finally:
        if tables:
            pyx_crc32c_use_hw(1)
        PyBuffer_Release(&view)
    return crc

cdef str _NO_TOPIC = ""                        # the Where of an index's reader names none


@cython.final
cdef class RecordSetIndex:
    """Where the batches of one partition's record set are, from one pass over their log
    headers (nothing is decoded or checked: the walker does that)."""

    def __cinit__(self):
        self.entries = NULL
        self.crc_state = NULL
        self.n = self.cap = self.size = self.whole_bytes = self.judged = 0
        self.v2_known = True
        self.v2_end = -1
        self.v2_bound = 0

    def __init__(self, record_set, int64_t fetch_offset=0):
        cdef Py_buffer view
        self.fetch_offset = fetch_offset
        if record_set is None:
            self.build(<const uint8_t*>"", 0)
            return
        PyObject_GetBuffer(record_set, &view, PyBUF_SIMPLE)
        try:
            self.build(<const uint8_t*>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    def __dealloc__(self):
        free(self.entries)
        free(self.crc_state)

    def verify_crcs(self, record_set):
        """Check the CRC32C of every whole v2 batch of ``record_set`` (the bytes this index
        was built from), without the GIL, and keep each one's outcome for the walkers: a
        batch found good is not checked again when it is read; one found bad, or not reached
        yet, is checked there as before (its error raised there, in order). Run on a decode
        thread as a large answer arrives, so the polling thread does not read every byte of
        it twice. Returns the batches checked."""
        cdef Py_buffer view
        cdef Py_ssize_t i, n = self.n, checked = 0
        cdef BatchEntry* e
        cdef const uint8_t* p
        cdef uint8_t* state
        if n == 0:
            return 0
        PyObject_GetBuffer(record_set, &view, PyBUF_SIMPLE)
        try:
            if view.len != self.size:
                raise ValueError(f"the index is of a record set of {self.size} bytes, not of "
                                 f"{view.len}")
            if self.crc_state == NULL:
                # made here, with the GIL, before any walker can look for it
                self.crc_state = <uint8_t*>calloc(n, 1)
                if self.crc_state == NULL:
                    raise MemoryError()
            state = self.crc_state
            with nogil:
                for i in range(n):
                    e = &self.entries[i]
                    if e.magic != 2 or e.size <= V2_ATTRS_AT or pyx_load_u8(&state[i]) != 0:
                        continue
                    p = <const uint8_t*>view.buf + e.start
                    pyx_store_u8(&state[i], 1 if pyx_crc32c(p + V2_ATTRS_AT, e.size - V2_ATTRS_AT)
                                 == pyx_be32(p + V2_CRC_AT) else 2)
                    checked += 1
        finally:
            PyBuffer_Release(&view)
        return checked

    def crc_states(self):
        """(tests) each entry's check-ahead state: 0 not checked, 1 good, 2 bad."""
        if self.crc_state == NULL:
            return [0] * self.n
        return [pyx_load_u8(&self.crc_state[i]) for i in range(self.n)]

    cdef bint crc_ok(self, Py_ssize_t start) noexcept nogil:
        cdef Py_ssize_t i
        if self.crc_state == NULL:
            return False
        i = self.find(start)
        return i >= 0 and pyx_load_u8(&self.crc_state[i]) == 1

    cdef int _add(self, const BatchEntry* e) except -1:
        cdef Py_ssize_t cap
        cdef BatchEntry* grown
        if self.n == self.cap:
            cap = 16 if self.cap == 0 else self.cap * 2
            grown = <BatchEntry*>realloc(self.entries, cap * sizeof(BatchEntry))
            if grown == NULL:
                raise MemoryError()
            self.entries = grown
            self.cap = cap
        self.entries[self.n] = e[0]
        self.n += 1
        return 0

    cdef int build(self, const uint8_t* data, Py_ssize_t size) except -1:
        """Index the whole batches from data's first byte, then judge() the prefetch end and
        the record bound at the fetch offset, as the v2 headers tell them. Both stay unknown
        (v2_known false), whatever the offset, for a record set with a batch of another
        magic, or a header that makes no sense (a length below the v2 minimum, a negative
        base offset, lastOffsetDelta or count), before its last 61 bytes (fewer cannot hold
        a batch header to judge); the entries before those bytes are the judged ones."""
        cdef Where where
        cdef Reader r, p
        cdef BatchEntry e
        cdef int64_t base
        cdef int32_t length, delta
        cdef int8_t magic
        cdef Py_ssize_t left
        cdef bint judging = True               # still before the last V2_HEADER bytes
        where.topic = <PyObject*>_NO_TOPIC     # for errors, and no read here can fail
        where.partition = -1
        where.origin = 0
        where.inflated = False
        rd_init(&r, data, size, &where, -1)
        self.size = size
        while True:
            left = rd_left(&r)
            if left < V2_HEADER:
                judging = False
            if batch_peek(&r, &base, &length) < 2:
                break                          # the end, or a header cut short
            if judging:
                batch_magic(&r, &magic)        # (judging: 61 bytes are there)
                if length < V2_MIN_LENGTH or magic != 2:
                    self.v2_known = False
            if length < HEADER_UP_TO_MAGIC - LOG_OVERHEAD:
                break                          # no magic to read: the walker raises here
            e.size = LOG_OVERHEAD + <Py_ssize_t>length
            if e.size > left:
                break                          # a trailing incomplete batch
            batch_magic(&r, &magic)
            e.start = r.pos
            e.magic = magic
            e.base_offset = base
            if magic == 2:
                if length < V2_MIN_LENGTH:
                    break
                p = r
                rd_skip(&p, V2_ATTRS_AT)
                rd_i16(&p, &e.attributes)
                rd_i32(&p, &delta)
                rd_skip(&p, V2_HEADER - V2_ATTRS_AT - 10)
                rd_i32(&p, &e.count)
                e.last_offset = base + delta
                if judging and (delta < 0 or base < 0 or e.count < 0):
                    self.v2_known = False
            elif magic == 0 or magic == 1:
                e.attributes = 0
                e.last_offset = base
                e.count = 1
            else:
                break                          # an unknown magic: the walker raises here
            self._add(&e)
            if judging:
                self.judged = self.n
            rd_skip(&r, e.size)
        self.whole_bytes = r.pos
        self.judge()
        return 0

    cdef void judge(self) noexcept nogil:
        """The prefetch end and the record bound at fetch_offset: the counts of the judged
        batches that reach it, and the offset after the last of them (none when the last
        judged batch ends before it). Only meaningful while v2_known."""
        cdef Py_ssize_t k
        cdef const BatchEntry* e
        self.v2_end = -1
        self.v2_bound = 0
        for k in range(self.judged):
            e = &self.entries[k]
            if e.last_offset >= self.fetch_offset:
                self.v2_bound += e.count
                self.v2_end = e.last_offset + 1
            else:
                self.v2_end = -1               # the last batch must reach the offset

    cdef Py_ssize_t find(self, Py_ssize_t start) noexcept nogil:
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.entries[mid].start < start:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.n and self.entries[lo].start == start:
            return lo
        return -1

    cdef list cuts(self, Py_ssize_t start, Py_ssize_t limit, int64_t fetch_offset,
                   Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes):
        """Record-set bytes to cut the run of whole v2 batches at start (up to byte limit)
        into about ``parts`` runs of equal bytes, each ending at a batch end; only the
        batches whose records at or past fetch_offset fit in max_records. None when there is
        nothing worth cutting: fewer than two batches (one, when head: the rest of the
        current batch is a run too), none compressed, fewer than min_bytes bytes."""
        cdef Py_ssize_t k = self.find(start), pos = start, total, i, last, target, j
        cdef int64_t count = 0
        cdef bint compressed = False
        cdef BatchEntry* e
        cdef list ends = []
        cdef list out = []
        while 0 <= k < self.n:
            e = &self.entries[k]
            if e.magic != 2 or e.start + e.size > limit:
                break
            if e.last_offset >= fetch_offset:
                if count + e.count > max_records:
                    break
                count += e.count               # (batches below the position only get skipped)
                compressed = compressed or (e.attributes & ATTR_CODEC) != 0
            pos += e.size
            ends.append(pos)
            k += 1
        total = pos - start
        if len(ends) < (1 if head else 2) or not compressed or total < min_bytes:
            return None
        last = len(ends) - 1                   # (this module does not wrap negative indices)
        i = 0
        for j in range(1, parts):              # the batch end nearest to each share of bytes
            target = start + total * j // parts
            while i < last - 1 and abs(<Py_ssize_t>ends[i + 1] - target) <= abs(
                    <Py_ssize_t>ends[i] - target):
                i += 1
            if i >= last or (out and ends[i] <= out[len(out) - 1]):
                break
            out.append(ends[i])
            i += 1
        out.append(ends[last])
        if len(out) < (1 if head else 2):
            return None
        return out

    @property
    def end(self):
        """The offset after the last whole batch (where a prefetch goes), None when that
        batch ends before the fetch offset, there is none, or the headers cannot tell."""
        return self.v2_end if self.v2_known and self.v2_end >= 0 else None

    @property
    def bound(self):
        """At least the records at or past the fetch offset the record set hands out (the
        counts of the whole batches that reach it), None when the headers cannot tell."""
        return self.v2_bound if self.v2_known else None

    @property
    def batches(self):
        """(start byte, size, magic, base offset, last offset, count) of each batch indexed."""
        cdef Py_ssize_t k
        return [(self.entries[k].start, self.entries[k].size, self.entries[k].magic,
                 self.entries[k].base_offset, self.entries[k].last_offset,
                 self.entries[k].count) for k in range(self.n)]

    def set_fetch_offset(self, int64_t fetch_offset):
        """Judge the end and bound again for a record set fetched at ``fetch_offset`` (an
        index built before the offset was known: the Fetch response decoder's)."""
        self.fetch_offset = fetch_offset
        self.judge()

    def cut_points(self, Py_ssize_t max_records, int parts, Py_ssize_t min_bytes=0, *,
                   Py_ssize_t start=0, bint head=False):
        """The record-set bytes a parallel take from byte ``start`` (a batch's first) would
        cut at (see CompletedFetch.cut), or None."""
        if parts < 2:
            return None
        return self.cuts(start, self.size, self.fetch_offset, max_records, parts, head,
                         min_bytes)

    def __len__(self):
        return self.n

    def __repr__(self):
        return (f"RecordSetIndex(batches={self.n}, size={self.size}, end={self.end}, "
                f"bound={self.bound})")
