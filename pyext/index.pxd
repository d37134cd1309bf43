# The record-set index: one pass over the batch log headers of a partition's record set,
# built once per partition response, read by everything that needs to know where batches
# are without decoding them: the prefetch end and the record bound (the fetcher), the size
# estimate of the Arrow builder, the cut points of a parallel take (CompletedFetch.cut), and
# byte counts (metrics). Reads go through reader.pxd, never past the record set; a header
# that makes no sense ends the index (the walker raises on it when it gets there), it is
# never an error here.
#
# Entries are the record set's whole batches from its first byte, in order, until its end,
# a trailing incomplete batch, or a header the index stops at (a length below a batch's
# minimum, an unknown magic). A v0/v1 message is an entry too (magic 0/1: its offset only).

ctypedef struct BatchEntry:
    Py_ssize_t start             # record-set byte of the batch's first byte
    Py_ssize_t size              # its bytes: LOG_OVERHEAD + batchLength
    int64_t base_offset          # baseOffset (v0/v1: the message's offset)
    int64_t last_offset          # baseOffset + lastOffsetDelta (v0/v1: the offset)
    int32_t count                # recordsCount (v0/v1: 1)
    int16_t attributes           # v2 attributes (v0/v1: 0)
    int8_t magic


cdef class RecordSetIndex:
    cdef BatchEntry* entries     # n entries (malloc'd)
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef readonly Py_ssize_t size          # bytes of the record set
    cdef readonly Py_ssize_t whole_bytes   # bytes of its entries (less a trailing incomplete batch)
    cdef readonly int64_t fetch_offset     # the offset the record set was fetched at
    cdef bint v2_known           # the v2 headers tell end and bound (see index.pyx)
    cdef Py_ssize_t judged       # the leading entries the end and bound are judged from
    cdef int64_t v2_end          # the prefetch end (-1: none)
    cdef int64_t v2_bound        # the record bound
    cdef uint8_t* crc_state      # per entry, once verify_crcs ran (else NULL): 0 not checked
                                 # (yet), 1 its CRC32C matched, 2 it did not; written by the
                                 # checking thread, read by walkers (pyx_load_u8/pyx_store_u8)
    cdef int build(self, const uint8_t* data, Py_ssize_t size) except -1
        # the entries and what the headers say whatever the fetch offset; then judge()
    cdef void judge(self) noexcept nogil   # end and bound at fetch_offset, from the entries
    cdef int _add(self, const BatchEntry* e) except -1
    cdef Py_ssize_t find(self, Py_ssize_t start) noexcept nogil
        # the entry starting at record-set byte start, -1 when none does
    cdef bint crc_ok(self, Py_ssize_t start) noexcept nogil
        # the v2 batch at record-set byte start was checked ahead and its CRC32C matched
    cdef list cuts(self, Py_ssize_t start, Py_ssize_t limit, int64_t fetch_offset,
                   Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes)
        # batch ends cutting the whole v2 batches from byte start (to limit) into runs
