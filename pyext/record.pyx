# --------------------------------------------------------------------------- ConsumerRecord

from cpython.bytes cimport PyBytes_FromStringAndSize

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
from cpython.object cimport PyTypeObject
from cpython.unicode cimport PyUnicode_DecodeUTF8

@cython.final
# GC-aware type (a deserializer may return a container the application later points back at
# the record, a cycle only the cyclic GC can free), but records decoded WITHOUT deserializers are
# untracked right after construction in make_record: their fields are then str, int, bytes,
# None and a list of (str, bytes | None) tuples, which cannot lead back to the record (short of
# the application appending the record to its own headers list, outside the documented type).
@cython.freelist(512)   # a poll hands out max.poll.records (500 by default) then drops them
cdef class ConsumerRecord:
    """One record as poll() hands it out (immutable)."""

    def __init__(self, str topic, int32_t partition, int64_t offset, int64_t timestamp,
                 int32_t timestamp_type, object key, object value, object headers=None,
                 object leader_epoch=None, int32_t serialized_key_size=-1,
                 int32_t serialized_value_size=-1):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = list(headers) if headers else None
        self._leader_epoch = -1 if leader_epoch is None else leader_epoch
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def headers(self):
        """list of (key str, value bytes | None); a new empty list when there are none."""
        return [] if self._headers is None else self._headers

    @property
    def leader_epoch(self):
        return None if self._leader_epoch < 0 else self._leader_epoch

    def __eq__(self, other):
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        cdef ConsumerRecord o = <ConsumerRecord>other
        return (self.topic == o.topic and self.partition == o.partition
                and self.offset == o.offset and self.timestamp == o.timestamp
                and self.timestamp_type == o.timestamp_type and self.key == o.key
                and self.value == o.value and self.headers == o.headers
                and self._leader_epoch == o._leader_epoch
                and self.serialized_key_size == o.serialized_key_size
                and self.serialized_value_size == o.serialized_value_size)

    __hash__ = None

    def __reduce__(self):
        return (ConsumerRecord, (self.topic, self.partition, self.offset, self.timestamp,
                                 self.timestamp_type, self.key, self.value, self._headers,
                                 self.leader_epoch, self.serialized_key_size,
                                 self.serialized_value_size))

    def __repr__(self):
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
                f"offset={self.offset}, timestamp={self.timestamp}, "
                f"timestamp_type={self.timestamp_type}, key={self.key!r}, value={self.value!r}, "
                f"headers={self.headers!r}, leader_epoch={self.leader_epoch}, "
                f"serialized_key_size={self.serialized_key_size}, "
                f"serialized_value_size={self.serialized_value_size})")


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
        const char* doc
    int T_OBJECT_EX
    int READONLY

cdef extern from "Python.h":
    object PyDescr_NewMember(PyTypeObject* type, PyMemberDef* member)
    void PyType_Modified(PyTypeObject* type)

# Offsets of the object fields in the instance struct, which Cython names after the module
# (pyconsumer._records) and the class: a rename fails here, at compile time.
cdef extern from *:
    """
    typedef struct __pyx_obj_10pyconsumer_8_records_ConsumerRecord pyx_consumer_record;
    #define PYX_CR_OFF(f) ((Py_ssize_t)offsetof(pyx_consumer_record, f))
    #define PYX_CR_OFF_topic PYX_CR_OFF(topic)
    #define PYX_CR_OFF_partition PYX_CR_OFF(partition)
    #define PYX_CR_OFF_offset PYX_CR_OFF(offset)
    #define PYX_CR_OFF_timestamp PYX_CR_OFF(timestamp)
    #define PYX_CR_OFF_timestamp_type PYX_CR_OFF(timestamp_type)
    #define PYX_CR_OFF_key PYX_CR_OFF(key)
    #define PYX_CR_OFF_value PYX_CR_OFF(value)
    #define PYX_TYPE_DICT(t) (((PyTypeObject *)(t))->tp_dict)
    """
    Py_ssize_t PYX_CR_OFF_topic
    Py_ssize_t PYX_CR_OFF_partition
    Py_ssize_t PYX_CR_OFF_offset
    Py_ssize_t PYX_CR_OFF_timestamp
    Py_ssize_t PYX_CR_OFF_timestamp_type
    Py_ssize_t PYX_CR_OFF_key
    Py_ssize_t PYX_CR_OFF_value
    PyObject* PYX_TYPE_DICT(object t)

# Member descriptors for the object fields (static: descriptors keep pointers to them).
cdef PyMemberDef _record_members[7]


cdef _install_member_descriptors():
    """Replace Cython's getset properties of ConsumerRecord's object fields by member
    descriptors: CPython 3.11+ specializes attribute loads of those into slot reads."""
    cdef const char* names[7]
    cdef Py_ssize_t offsets[7]
    names[:] = [b"topic", b"partition", b"offset", b"timestamp", b"timestamp_type", b"key",
                 b"value"]
    offsets[0] = PYX_CR_OFF_topic
    offsets[1] = PYX_CR_OFF_partition
    offsets[2] = PYX_CR_OFF_offset
    offsets[3] = PYX_CR_OFF_timestamp
    offsets[4] = PYX_CR_OFF_timestamp_type
    offsets[5] = PYX_CR_OFF_key
    offsets[6] = PYX_CR_OFF_value
    tp_dict = <object>PYX_TYPE_DICT(ConsumerRecord)
    for i in range(7):
        _record_members[i].name = names[i]
        _record_members[i].type = T_OBJECT_EX
        _record_members[i].offset = offsets[i]
        _record_members[i].flags = READONLY
        _record_members[i].doc = NULL
        tp_dict[names[i].decode()] = PyDescr_NewMember(<PyTypeObject*>ConsumerRecord,
                                                       &_record_members[i])
    PyType_Modified(<PyTypeObject*>ConsumerRecord)


_install_member_descriptors()


cdef list headers_list(_Walker w, RecView* v):
    """The headers of v (validated by v2_read) as [(str, bytes | None)]; keys that are not
    UTF-8 get U+FFFD replacements (as the Arrow path writes them)."""
    cdef Reader hr = w.rr                      # the region v was read from
    cdef int32_t klen, vlen, j
    cdef const uint8_t* p
    cdef list out = []
    hr.pos = v.headers - w.rr.buf
    hr.end = hr.pos + v.headers_len
    hr.offset = v.offset
    for j in range(v.header_count):
        rd_varint(&hr, &klen)
        p = rd_bytes(&hr, klen)
        key = PyUnicode_DecodeUTF8(<const char*>p, klen, "replace")
        rd_varint(&hr, &vlen)
        if vlen >= 0:
            p = rd_bytes(&hr, vlen)
            out.append((key, PyBytes_FromStringAndSize(<const char*>p, vlen)))
        else:
            out.append((key, None))
    return out


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
