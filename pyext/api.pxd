# The public API: CompletedFetch (a partition's fetched record set, drained at most N records
# or rows per take, the way Java's Fetcher drains a completed fetch under max.poll.records),
# its cut into plain cursors over whole batches for a parallel take (cut/join: the caller
# schedules them), decode_records and decode_arrow (a whole record set at once).

cdef class CompletedFetch:
    cdef _Walker w                   # the cursor
    cdef bint include_headers        # take_arrow builds the headers column
    cdef object key_deserializer     # callable(bytes | None) or None
    cdef object value_deserializer   # callable(bytes | None) or None
    cdef bint discarded              # discard() was called
