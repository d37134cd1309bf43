# The public API: CompletedFetch (a partition's fetched record set, drained at most N records
# or rows per take, the way Java's Fetcher drains a completed fetch under max.poll.records),
# decode_records and decode_arrow (a whole record set at once).

cdef class CompletedFetch:
    cdef _Walker w                   # the cursor
    cdef bint include_headers        # take_arrow builds the headers column
    cdef object key_deserializer     # callable(bytes | None) or None
    cdef object value_deserializer   # callable(bytes | None) or None
    cdef bint discarded              # discard() was called
    cdef list _split(self, Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes)
        # sub-cursors over the next whole batches, cut for take_arrow_split (None: no cut;
        # head: the rest of the current batch is taken alongside, one run is enough)
