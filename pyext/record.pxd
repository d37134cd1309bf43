# ConsumerRecord, what poll() hands out, and its making from a decoded record.
#
# Module-private, so not declared here (functions declared in a .pxd are exported, never
# inlined by the C compiler; both run per record):
#   make_record(_Walker w, RecView* v, bint untrack) -> ConsumerRecord, the record v of w's
#     current batch (record.pyx), made in place: off the type's free list (or newly allocated),
#     tracked by the GC only when not untrack, each field written once.
#   records_fill_v2(_Walker w, list out, Py_ssize_t max_records) -> int (except -1),
#     take_records' loop over a magic-2 batch without deserializers: records appended to out
#     up to max_records or the batch's end, the cursor handed back through w.took (also when
#     an error stops it, right after the last record appended).

cdef class ConsumerRecord:
    # Python-visible fields are objects exposed through member descriptors (set up at
    # import), which CPython's specializing interpreter reads as direct slot loads.
    cdef readonly object topic              # str: topic name
    cdef readonly object partition          # int: partition id
    cdef readonly object offset             # int: record offset
    cdef readonly object timestamp          # int: ms since epoch (-1 for magic v0)
    cdef readonly object timestamp_type     # int: -1 none, 0 CreateTime, 1 LogAppendTime
    cdef readonly object key                # bytes | None, or what the key deserializer returned
    cdef readonly object value              # bytes | None, or what the value deserializer returned
    cdef object _headers                    # list[tuple[str, bytes | None]], None when no headers
    cdef int32_t _leader_epoch              # -1 when unknown (exposed as None)
    cdef readonly int32_t serialized_key_size    # key bytes on the wire, -1 when null
    cdef readonly int32_t serialized_value_size  # value bytes on the wire, -1 when null


cdef list headers_list(_Walker w, RecView* v)   # v's headers: [(str, bytes | None)]
