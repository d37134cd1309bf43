# ConsumerRecord, what poll() hands out, and its making from a decoded record (inline here:
# it runs once per record handed out).
from cpython.bytes cimport PyBytes_FromStringAndSize

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)


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


cdef inline ConsumerRecord make_record(_Walker w, RecView* v, bint untrack):
    """The record v of w's current batch. untrack: no deserializer will run, so the record
    cannot be part of a reference cycle (see ConsumerRecord) and leaves the GC's lists."""
    cdef ConsumerRecord rec = ConsumerRecord.__new__(ConsumerRecord)
    rec.topic = w.topic
    rec.partition = w.partition_obj
    rec.offset = v.offset
    # LogAppendTime batches stamp every record with the same time, and producers batch many
    # records within one millisecond: share the int object instead of allocating one each
    if w.ts_obj is None or v.timestamp != w.ts_val:
        w.ts_obj = v.timestamp
        w.ts_val = v.timestamp
    rec.timestamp = w.ts_obj
    rec.timestamp_type = w.ts_type
    if v.key_len >= 0:
        rec.key = PyBytes_FromStringAndSize(<const char*>v.key, v.key_len)
    else:
        rec.key = None
    if v.value_len >= 0:
        rec.value = PyBytes_FromStringAndSize(<const char*>v.value, v.value_len)
    else:
        rec.value = None
    rec._headers = headers_list(w, v) if v.header_count > 0 else None
    rec._leader_epoch = w.epoch
    rec.serialized_key_size = v.key_len
    rec.serialized_value_size = v.value_len
    if untrack:
        PyObject_GC_UnTrack(<void*>rec)    # no cycle can pass through it (see ConsumerRecord)
    return rec
