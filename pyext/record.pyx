# --------------------------------------------------------------------------- ConsumerRecord

from cpython.bytes cimport PyBytes_FromStringAndSize

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport INT32_MAX
from libc.string cimport memcpy
from cpython.unicode cimport PyUnicode_DecodeUTF8

@cython.final
# GC-aware type (a deserializer may return a container the application later points back at
# the record, a cycle only the cyclic GC can free), but records decoded WITHOUT deserializers are
# never tracked (make_record): their fields are then str, int, bytes,
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


# Records made by the takes skip Cython's tp_new: it zeroes the whole instance, stores None
# in every object field and links the object into the GC's young generation, all undone at
# once when the fields are written and the record is untracked. Here a record comes off the
# type's own free list (whose records Cython's tp_dealloc left with NULL object fields) or
# from the GC's allocator, untracked unless asked, and its fields are written once.
cdef extern from *:
    """
    static CYTHON_INLINE PyObject* pyx_cr_alloc(PyTypeObject* t, int track, int* count,
                                                PyObject** list) {
        PyObject* o;
        if (list != NULL && *count > 0) {
            o = list[--*count];
            (void)PyObject_INIT(o, t);
            if (track) PyObject_GC_Track(o);
            return o;
        }
        o = PyObject_GC_New(PyObject, t);    /* untracked, fields not set */
        if (o == NULL) return NULL;
        memset((char*)o + sizeof(PyObject), 0, (size_t)t->tp_basicsize - sizeof(PyObject));
        if (track) PyObject_GC_Track(o);
        return o;
    }
    /* Cython keeps its free lists in the module state since 3.3 at the latest (the names
       checked at compile time; a heap type would also need its references kept as Cython
       does); otherwise every record is allocated */
    #if CYTHON_USE_FREELISTS && !CYTHON_USE_TYPE_SPECS && CYTHON_HEX_VERSION >= 0x030300F0
    #define PYX_CR_ALLOC(t, track) ((pyx_consumer_record*)pyx_cr_alloc((PyTypeObject*)(t), \
        (track), \
        &__pyx_mstate_global->__pyx_freecount_10pyconsumer_8_records_ConsumerRecord, \
        (PyObject**)__pyx_mstate_global->__pyx_freelist_10pyconsumer_8_records_ConsumerRecord))
    #else
    #define PYX_CR_ALLOC(t, track) ((pyx_consumer_record*)pyx_cr_alloc((PyTypeObject*)(t), \
        (track), NULL, NULL))
    #endif
    """
    # The instance struct as C sees it: stores through it take no reference of their own.
    ctypedef struct pyx_consumer_record:
        PyObject* topic
        PyObject* partition
        PyObject* offset
        PyObject* timestamp
        PyObject* timestamp_type
        PyObject* key
        PyObject* value
        PyObject* _headers
        int32_t _leader_epoch
        int32_t serialized_key_size
        int32_t serialized_value_size
    # a new record, object fields NULL (ConsumerRecord's dealloc clears them), or NULL with
    # MemoryError set; a ConsumerRecord as Cython sees it
    ConsumerRecord PYX_CR_ALLOC(object t, bint track)

cdef extern from "Python.h":
    # the constructors that fill a record's fields: new references, NULL on error
    PyObject* cr_bytes "PyBytes_FromStringAndSize"(const char* v, Py_ssize_t n) except NULL
    PyObject* cr_int64 "PyLong_FromLongLong"(long long v) except NULL
    PyObject* cr_int32 "PyLong_FromLong"(long v) except NULL


# the timestamp types as the int objects every record shares
cdef tuple _TS_TYPES = (-1, 0, 1)


cdef inline ConsumerRecord make_record(_Walker w, RecView* v, bint untrack):
    """The record v of w's current batch. untrack: no deserializer will run, so the record
    cannot be part of a reference cycle (see ConsumerRecord) and stays out of the GC's lists.
    On an error the record is dropped (its dealloc clears the fields written so far)."""
    cdef ConsumerRecord rec = PYX_CR_ALLOC(ConsumerRecord, not untrack)
    cdef pyx_consumer_record* r = <pyx_consumer_record*><PyObject*>rec
    Py_INCREF(w.topic)
    r.topic = <PyObject*>w.topic
    Py_INCREF(w.partition_obj)
    r.partition = <PyObject*>w.partition_obj
    r.offset = cr_int64(v.offset)
    # LogAppendTime batches stamp every record with the same time, and producers batch many
    # records within one millisecond: share the int object instead of allocating one each
    if w.ts_obj is None or v.timestamp != w.ts_val:
        w.ts_obj = v.timestamp
        w.ts_val = v.timestamp
    Py_INCREF(w.ts_obj)
    r.timestamp = <PyObject*>w.ts_obj
    if -1 <= w.ts_type <= 1:                 # (-1 none, 0 CreateTime, 1 LogAppendTime)
        tt = <object>PyTuple_GET_ITEM(_TS_TYPES, w.ts_type + 1)
        Py_INCREF(tt)
        r.timestamp_type = <PyObject*>tt
    else:
        r.timestamp_type = cr_int32(w.ts_type)
    if v.key_len >= 0:
        r.key = cr_bytes(<const char*>v.key, v.key_len)
    else:
        Py_INCREF(None)
        r.key = <PyObject*>None
    if v.value_len >= 0:
        r.value = cr_bytes(<const char*>v.value, v.value_len)
    else:
        Py_INCREF(None)
        r.value = <PyObject*>None
    if v.header_count > 0:
        headers = headers_list(w, v)
        Py_INCREF(headers)
        r._headers = <PyObject*>headers
    else:
        Py_INCREF(None)
        r._headers = <PyObject*>None
    r._leader_epoch = w.epoch
    r.serialized_key_size = v.key_len
    r.serialized_value_size = v.value_len
    return rec


cdef int records_fill_v2(_Walker w, list out, Py_ssize_t max_records) except -1:
    """take_records' loop over w's current magic-2 batch without deserializers: parse
    (v2_fast) and make each record in one loop, the cursor in locals, up to max_records in
    out or the batch's end; the cursor goes back through w.took (also when an error stops the
    loop: the records in out are handed out, the position stays right after the last)."""
    cdef const uint8_t* q = w.rr.buf + w.rr.pos
    cdef const uint8_t* e = w.rr.buf + w.rr.end
    cdef const uint8_t* nq
    cdef Reader rl                             # for v2_careful and the end check only
    cdef V2Batch hdr = w.v2
    cdef RecTaken t
    cdef RecView v
    cdef int32_t remaining = w.remaining
    cdef int64_t nfo = w.next_fetch_offset
    cdef Py_ssize_t n = len(out), n0 = n
    cdef bint fast = v2_fast_enabled
    cdef ConsumerRecord rec
    try:
        while remaining > 0 and n < max_records:
            nq = v2_fast(q, e, &hdr, &t) if fast else NULL
            if nq != NULL:
                v.offset = t.offset
                v.timestamp = t.timestamp
                v.key = t.key
                v.key_len = t.key_len
                v.value = t.value
                v.value_len = t.value_len
                v.headers = t.headers
                v.headers_len = t.headers_len
                v.header_count = t.header_count
            else:
                rl = w.rr
                rl.pos = q - rl.buf
                v2_careful(&rl, &w.v2, &v)
                nq = rl.buf + rl.pos
            if remaining == 1 and nq != e:
                q = nq                         # where read_record leaves the cursor: past
                remaining = 0                  # the last record, before the bytes after it
                rl = w.rr
                rl.pos = q - rl.buf
                batch_check_end(&rl, w.base_offset)   # raises: bytes after the last record
            if v.offset < nfo:
                q = nq
                remaining -= 1
                continue                       # below the fetch position
            rec = make_record(w, &v, True)
            out.append(rec)
            q = nq
            remaining -= 1
            nfo = v.offset + 1
            n += 1
    finally:
        w.took(q - w.rr.buf, remaining, nfo, n > n0)
    return 0


cdef inline ConsumerRecord _record_with(ConsumerRecord src, object key, object value):
    """A new record: src's fields, key and value replaced, headers a list of its own (as
    ConsumerRecord(...) copies them); tracked, as its key or value may be any object."""
    cdef ConsumerRecord rec = PYX_CR_ALLOC(ConsumerRecord, True)
    cdef pyx_consumer_record* r = <pyx_consumer_record*><PyObject*>rec
    headers = None if src._headers is None else list(src._headers)
    Py_INCREF(src.topic)
    r.topic = <PyObject*>src.topic
    Py_INCREF(src.partition)
    r.partition = <PyObject*>src.partition
    Py_INCREF(src.offset)
    r.offset = <PyObject*>src.offset
    Py_INCREF(src.timestamp)
    r.timestamp = <PyObject*>src.timestamp
    Py_INCREF(src.timestamp_type)
    r.timestamp_type = <PyObject*>src.timestamp_type
    Py_INCREF(key)
    r.key = <PyObject*>key
    Py_INCREF(value)
    r.value = <PyObject*>value
    Py_INCREF(headers)
    r._headers = <PyObject*>headers
    r._leader_epoch = src._leader_epoch
    r.serialized_key_size = src.serialized_key_size
    r.serialized_value_size = src.serialized_value_size
    return rec


def records_with(list records, list offsets, list keys=None, list values=None):
    """The records (of one partition) at offsets, each as a new record whose key is keys[i]
    and value values[i] (None lists: its own), in the order of offsets: what a typed poll()
    hands out after its plan decoded the chunk. KeyError for an offset no record has."""
    cdef Py_ssize_t n = len(records), m = len(offsets), i, j = 0
    cdef ConsumerRecord src
    cdef dict by_offset = None
    cdef list out = []
    if keys is not None and len(keys) != m or values is not None and len(values) != m:
        raise ValueError(f"records_with: {m} offsets, but {len(keys or ())} keys and "
                         f"{len(values or ())} values")
    for i in range(m):
        offset = offsets[i]
        # the plan keeps the records' order (dropping some): walk along them
        while j < n and (<ConsumerRecord?>records[j]).offset != offset:
            j += 1
        if j < n:
            src = <ConsumerRecord?>records[j]
            j += 1
        else:                                  # out of order: look it up
            if by_offset is None:
                by_offset = {(<ConsumerRecord?>r).offset: r for r in records}
            src = <ConsumerRecord?>by_offset[offset]
        out.append(_record_with(src, src.key if keys is None else keys[i],
                                src.value if values is None else values[i]))
    return out


cdef object _binary_column(list records, Py_ssize_t n, bint keys):
    """The keys (or values) of records as a pyarrow binary array: bytes or None each."""
    cdef _PBuf valid = _PBuf(n // 8 + 1, 0xFF)        # all valid until a null
    cdef _PBuf offs = _PBuf((n + 1) * 4)
    cdef Py_ssize_t i, used = 0, size, nulls = 0
    cdef ConsumerRecord r
    cdef int32_t* po
    data = _PBuf(1024)
    (<int32_t*>offs.ptr)[0] = 0
    for i in range(n):
        r = <ConsumerRecord?>records[i]
        x = r.key if keys else r.value
        if x is None:
            clear_bit(valid.ptr, i)
            nulls += 1
        elif type(x) is bytes:
            size = len(<bytes>x)
            if used + size > INT32_MAX:
                raise OverflowError(f"the {'keys' if keys else 'values'} of {n} records exceed "
                                    f"Arrow's 2 GiB binary limit")
            data.ensure(used + size)
            memcpy(data.ptr + used, <const char*>(<bytes>x), size)
            used += size
        else:
            raise TypeError(f"the {'key' if keys else 'value'} of the record at offset "
                            f"{r.offset} is a {type(x).__name__}, not bytes or None")
        po = <int32_t*>offs.ptr
        po[i + 1] = <int32_t>used
    return pa.Array.from_buffers(pa.binary(), n, [valid.finish(n // 8 + 1) if nulls else None,
                                                  offs.finish((n + 1) * 4),
                                                  data.finish(used)], null_count=nulls)


def records_columns(list records, bint keys=True, bint values=True):
    """(offsets, keys, values) of records as pyarrow arrays (int64, binary, binary; keys or
    values None when not asked for): what a typed poll() hands its plan, without a Python
    list per column. A key or value that is not bytes or None is a TypeError."""
    cdef Py_ssize_t n = len(records), i
    cdef _PBuf offsets = _PBuf(n * 8)
    cdef int64_t* p = <int64_t*>offsets.ptr
    for i in range(n):
        p[i] = (<ConsumerRecord?>records[i]).offset
    return (pa.Array.from_buffers(pa.int64(), n, [None, offsets.finish(n * 8)], null_count=0),
            _binary_column(records, n, True) if keys else None,
            _binary_column(records, n, False) if values else None)
