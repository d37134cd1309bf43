# Record sets -> ConsumerRecord objects or Arrow columns, and draining them.
#
# Wire layouts (Kafka's DefaultRecordBatch / LegacyRecord), offsets from the batch start:
#
#   v2 batch: baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8
#             | crc uint32 (CRC32C of attributes..end) | attributes int16 | lastOffsetDelta int32
#             | baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16
#             | baseSequence int32 | recordsCount int32 | records
#     attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 LogAppendTime,
#                 bit 4 transactional, bit 5 control
#   v2 record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
#              | keyLength varint | key | valueLength varint | value | headerCount varint
#              | [headerKeyLength varint | key | headerValueLength varint | value] ...
#   v0/v1 message: offset int64 | messageSize int32 | crc uint32 (CRC32 of magic..end) | magic int8
#              | attributes int8 | [timestamp int64, v1] | keyLength int32 | key
#              | valueLength int32 | value
#     a compressed message (wrapper) carries an inner message set as its value; inner offsets
#     are relative in v1 (the wrapper offset is the LAST inner offset), absolute in v0.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBuffer_FillInfo,
                             PyBuffer_IsContiguous)
from cpython.bytearray cimport PyByteArray_Check
from cpython.bytes cimport PyBytes_Check
from cpython.memoryview cimport PyMemoryView_Check, PyMemoryView_GET_BUFFER
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.ref cimport PyObject
from cpython.object cimport PyTypeObject
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t,
                          uintptr_t, INT32_MAX)
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, realloc, free

cdef extern from "Python.h":
    # Py_buffer with ``obj`` as a raw pointer: a memoryview's may be NULL
    ctypedef struct _RawBuffer "Py_buffer":
        void* buf
        PyObject* obj
        Py_ssize_t len


from pyext.reader cimport (Reader, rd_init, rd_fail, rd_fail_nogil, rd_need, rd_i8, rd_i16, rd_i32,
                     rd_i64, rd_varint, rd_varlong, rd_skip, rd_bytes, pyx_be16, pyx_be32, pyx_copy,
                     pyx_be64, pyx_crc32, pyx_xxh32_short, pyx_utf8_valid)

import pyarrow as pa
import cramjam
from crc32c import crc32c as _crc32c

from pyconsumer.errors import (CorruptRecordError, UnsupportedCodecError,
                               RecordDeserializationError)
from pyext.reader cimport pyx_rd_set_error_factory


def _reader_error(int code, Py_ssize_t n, Py_ssize_t pos, topic, int partition, long long offset):
    """Raise the CorruptRecordError for a failed bounds-checked read (called from wire.h)."""
    if code == 0:
        what = f"Can't read {n} bytes (truncated or corrupt data)"
    elif code == 1:
        what = "Malformed varint (too long for its type)"
    else:
        what = f"Invalid length {n}"
    raise CorruptRecordError(f"{what} at byte {pos} of the batch records", topic=topic,
                             partition=None if partition < 0 else partition,
                             offset=None if offset < 0 else offset)


pyx_rd_set_error_factory(_reader_error)

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ


cdef enum:
    LOG_OVERHEAD = 12            # offset int64 + length int32
    HEADER_UP_TO_MAGIC = 17      # LOG_OVERHEAD + epoch int32 + magic int8
    V2_HEADER = 61               # v2 batch header size
    V2_MIN_LENGTH = 49           # V2_HEADER - LOG_OVERHEAD
    V2_CRC_AT = 17
    V2_ATTRS_AT = 21
    V2_LAST_DELTA_AT = 23
    V2_BASE_TS_AT = 27
    V2_MAX_TS_AT = 35
    V2_PID_AT = 43
    V2_COUNT_AT = 57
    V2_MIN_RECORD = 7            # smallest v2 record: 7 one-byte fields
    V0_MIN_SIZE = 14             # crc + magic + attributes + key length + value length
    V1_MIN_SIZE = 22             # V0_MIN_SIZE + timestamp
    ATTR_CODEC = 0x07
    ATTR_LOG_APPEND = 0x08
    ATTR_TXN = 0x10
    ATTR_CONTROL = 0x20

# Decompressed batches larger than this are refused (a hostile or corrupt batch must not
# make us allocate without bound). Kafka's own max.message.bytes is 1 MiB by default.
cdef Py_ssize_t _max_decompressed = 256 * 1024 * 1024

_CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def set_max_decompressed_size(Py_ssize_t nbytes) -> None:
    """Refuse compressed batches whose decompressed size exceeds ``nbytes`` (default 256 MiB)."""
    global _max_decompressed
    if nbytes < 1024:
        raise ValueError(f"max decompressed size must be >= 1024 bytes, got {nbytes}")
    _max_decompressed = nbytes


def get_max_decompressed_size() -> int:
    return _max_decompressed


# --------------------------------------------------------------------------- ConsumerRecord

@cython.final
# GC-aware type (a deserializer may return a container the application later points back at
# the record, a cycle only the cyclic GC can free), but records decoded WITHOUT deserializers are
# untracked right after construction in _make_record: their fields are then str, int, bytes,
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

cdef extern from *:
    """
    #define PYX_CR_OFF_topic ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, topic))
    #define PYX_CR_OFF_partition ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, partition))
    #define PYX_CR_OFF_offset ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, offset))
    #define PYX_CR_OFF_timestamp ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, timestamp))
    #define PYX_CR_OFF_timestamp_type ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, timestamp_type))
    #define PYX_CR_OFF_key ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, key))
    #define PYX_CR_OFF_value ((Py_ssize_t)offsetof(struct __pyx_obj_5pyext_7records_ConsumerRecord, value))
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



# --------------------------------------------------------------------------- buffers

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

# Freed large output buffers, kept for reuse: writing a fresh 100 MB buffer costs more in
# page faults (the kernel zeroing 25,600 new pages) than decoding the records that fill it.
# Only blocks of at least _CACHE_MIN bytes are kept, up to _cache_limit bytes in all.
cdef Py_ssize_t _CACHE_MIN = 1 << 20
cdef Py_ssize_t _cache_limit = 256 << 20
cdef Py_ssize_t _cache_bytes = 0
cdef list _cache = []                     # [(capacity, address)], unordered, short
cdef Py_ssize_t _native_now = 0           # bytes held by live _PBuf blocks
cdef Py_ssize_t _native_peak = 0


def set_buffer_cache_limit(Py_ssize_t nbytes) -> None:
    """Keep at most ``nbytes`` of freed Arrow output buffers for reuse (0 disables)."""
    global _cache_limit, _cache_bytes
    if nbytes < 0:
        raise ValueError(f"the buffer cache limit must be >= 0, got {nbytes}")
    _cache_limit = nbytes
    while _cache_bytes > _cache_limit and _cache:
        cap, addr = _cache.pop()
        _cache_bytes -= cap
        free(<void*><uintptr_t>addr)


def get_buffer_cache_limit() -> int:
    return _cache_limit


def native_memory():
    """(bytes held by live Arrow output buffers, high-water mark since reset_native_peak)."""
    return _native_now, _native_peak


def reset_native_peak() -> None:
    global _native_peak
    _native_peak = _native_now


cdef inline void _account(Py_ssize_t delta) noexcept:
    global _native_now, _native_peak
    _native_now += delta
    if _native_now > _native_peak:
        _native_peak = _native_now


cdef void* _cache_take(Py_ssize_t want, Py_ssize_t* got):
    """A cached block of at least ``want`` bytes (at most 2x, not to waste), or NULL."""
    global _cache_bytes
    cdef Py_ssize_t i, best = -1, best_cap = 0, cap
    if want < _CACHE_MIN:
        return NULL
    for i in range(len(_cache)):
        cap = _cache[i][0]
        if want <= cap <= 2 * want and (best < 0 or cap < best_cap):
            best, best_cap = i, cap
    if best < 0:
        return NULL
    cap, addr = _cache.pop(best)
    _cache_bytes -= cap
    got[0] = cap
    return <void*><uintptr_t>addr


cdef void _cache_give(void* p, Py_ssize_t cap):
    global _cache_bytes
    cdef Py_ssize_t smallest
    if _cache is None:          # interpreter shutdown: module state already cleared
        free(p)
        return
    if cap >= _CACHE_MIN and cap <= _cache_limit:
        # make room by dropping the smallest blocks first
        while _cache_bytes + cap > _cache_limit and _cache:
            smallest = min(range(len(_cache)), key=lambda i: _cache[i][0])
            old_cap, old_addr = _cache.pop(smallest)
            _cache_bytes -= old_cap
            free(<void*><uintptr_t>old_addr)
        _cache.append((cap, <uintptr_t>p))
        _cache_bytes += cap
    else:
        free(p)


@cython.final
cdef class _PBuf:
    def __cinit__(self, Py_ssize_t initial, bint zero=False):
        self.ptr = NULL
        self.cap = 0
        self.size = 0
        self.zero = zero
        if initial < 64:
            initial = 64
        self._resize(initial, 0)

    def __dealloc__(self):
        if self.ptr != NULL:
            _account(-self.cap)
            _cache_give(self.ptr, self.cap)
            self.ptr = NULL

    cdef int _resize(self, Py_ssize_t new, Py_ssize_t keep) except -1:
        """Make the capacity at least ``new`` bytes, keeping the first ``keep``."""
        cdef void* q = NULL
        cdef Py_ssize_t got = new
        q = _cache_take(new, &got)
        if q == NULL:
            if posix_memalign(&q, 64, <size_t>new) != 0:
                raise MemoryError(f"cannot allocate an Arrow buffer of {new} bytes")
        if keep:
            memcpy(q, self.ptr, keep)
        if self.zero and got > keep:
            memset(<uint8_t*>q + keep, 0, got - keep)
        if self.ptr != NULL:
            _account(-self.cap)
            _cache_give(self.ptr, self.cap)
        _account(got)
        self.ptr = <uint8_t*>q
        self.cap = got
        return 0

    cdef int ensure(self, Py_ssize_t nbytes) except -1:
        cdef Py_ssize_t new
        if nbytes <= self.cap:
            return 0
        new = self.cap + (self.cap >> 1)
        if new < nbytes:
            new = nbytes
        return self._resize(new, self.cap)

    cdef int ensure_to(self, Py_ssize_t nbytes) except -1:
        if nbytes <= self.cap:
            return 0
        return self._resize(nbytes, self.cap)

    cdef int regrow(self, Py_ssize_t nbytes, Py_ssize_t used) except -1:
        """Refit to nbytes copying only the first `used` bytes (growing in place would copy
        the whole old capacity); a capacity over 1.5x nbytes (an upfront guess far too large)
        is given back too, so the batch does not hold memory it will never fill."""
        if nbytes < used:
            nbytes = used
        if nbytes <= self.cap and self.cap - nbytes <= (nbytes >> 1):
            return 0
        return self._resize(nbytes, used)

    cdef object finish(self, Py_ssize_t nbytes):
        if self.cap >= _CACHE_MIN and nbytes < self.cap // 2 and nbytes < _CACHE_MIN:
            self._resize_down(nbytes)
        self.size = nbytes
        return pa.py_buffer(self)

    cdef void _resize_down(self, Py_ssize_t nbytes):
        # a big block mostly unused (a short batch): hand it back and keep a small copy
        cdef void* q = NULL
        if nbytes < 64:
            nbytes = 64
        if posix_memalign(&q, 64, <size_t>nbytes) != 0:
            return
        memcpy(q, self.ptr, nbytes)
        _account(nbytes - self.cap)
        _cache_give(self.ptr, self.cap)
        self.ptr = <uint8_t*>q
        self.cap = nbytes

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, <void*>(self.ptr if self.ptr != NULL else <uint8_t*>""),
                          self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


@cython.final
cdef class _CBuf:
    def __cinit__(self, bint zero=False):
        self.ptr = NULL
        self.cap = 0
        self.size = 0
        self.zero = zero

    def __dealloc__(self):
        free(self.ptr)

    cdef int ensure(self, Py_ssize_t nbytes) except -1 nogil:
        cdef Py_ssize_t new
        cdef uint8_t* p
        if nbytes <= self.cap:
            return 0
        new = self.cap * 2
        if new < nbytes:
            new = nbytes
        if new < 64:
            new = 64
        p = <uint8_t*>realloc(self.ptr, new)
        if p == NULL:
            with gil:
                raise MemoryError(f"cannot grow a header buffer to {new} bytes")
        if self.zero:
            memset(p + self.cap, 0, new - self.cap)
        self.ptr = p
        self.cap = new
        return 0

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, <void*>(self.ptr if self.ptr != NULL else <uint8_t*>""),
                          self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


cdef inline void _set_bit(uint8_t* bits, Py_ssize_t i) noexcept nogil:
    bits[i >> 3] |= <uint8_t>(1 << (i & 7))


# --------------------------------------------------------------------------- Arrow schema

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


# --------------------------------------------------------------------------- Arrow builder

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
        self.key_valid = _PBuf(rows // 8 + 1, True)
        self.key_offs = _PBuf((rows + 1) * 4)
        self.key_data = _PBuf(key_bytes)
        self.val_valid = _PBuf(rows // 8 + 1, True)
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

    cdef int add(self, RecView* v, int32_t ts_type) except -1 nogil:
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
            _set_bit(self.p_kv, i)
        else:
            self.key_nulls += 1
        self.p_ko[i + 1] = <int32_t>ku
        if v.value_len >= 0:
            pyx_copy(self.p_vd + vu, v.value, v.value_len)
            vu += v.value_len
            self.val_used = vu
            _set_bit(self.p_vv, i)
        else:
            self.val_nulls += 1
        self.p_vo[i + 1] = <int32_t>vu
        if self.include_headers:
            self.add_headers(v)
        self.n = i + 1
        return 1

    cdef int add_headers(self, RecView* v) except -1 nogil:
        cdef Py_ssize_t i = self.n, j, h
        cdef Reader hr
        cdef int32_t klen, vlen
        cdef const uint8_t* p
        if v.header_count == 0:
            self.h_nulls += 1
            (<int32_t*>self.h_offs.ptr)[i + 1] = <int32_t>self.h_count
            return 0
        _set_bit(self.h_valid.ptr, i)
        rd_init(&hr, v.headers, v.headers_len, NULL, -1, v.offset)
        h = self.h_count + v.header_count
        self.hk_offs.ensure((h + 1) * 4)
        self.hv_offs.ensure((h + 1) * 4)
        self.hv_valid.ensure(h // 8 + 1)
        for j in range(v.header_count):
            rd_varint(&hr, &klen)
            p = rd_bytes(&hr, klen)
            self.hk_data.ensure(self.hk_used + 3 * klen)
            if pyx_utf8_valid(p, klen):
                memcpy(self.hk_data.ptr + self.hk_used, p, klen)
                self.hk_used += klen
            else:
                self.hk_used += _utf8_replace(p, klen, self.hk_data.ptr + self.hk_used)
            (<int32_t*>self.hk_offs.ptr)[self.h_count + 1] = <int32_t>self.hk_used
            rd_varint(&hr, &vlen)
            if vlen >= 0:
                p = rd_bytes(&hr, vlen)
                self.hv_data.ensure(self.hv_used + vlen)
                memcpy(self.hv_data.ptr + self.hv_used, p, vlen)
                self.hv_used += vlen
                _set_bit(self.hv_valid.ptr, self.h_count)
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
        cdef Py_ssize_t n = self.n, i
        cdef bytes tb = topic.encode("utf-8")
        cdef Py_ssize_t tl = len(tb)
        if n * tl > INT32_MAX:
            raise OverflowError(
                f"topic column of {n} rows x {tl} bytes exceeds Arrow's 2 GiB string limit")
        tofs = _PBuf((n + 1) * 4)
        pcol = _PBuf(n * 4)
        cdef int32_t* to = <int32_t*>tofs.ptr
        cdef int32_t* pc = <int32_t*>pcol.ptr
        for i in range(n + 1):
            to[i] = <int32_t>(i * tl)
        for i in range(n):
            pc[i] = partition
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
                                                       pa.py_buffer(tb * n)], null_count=0),
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


# --------------------------------------------------------------------------- record objects

cdef list _headers_list(_Walker w, RecView* v):
    cdef Reader hr
    cdef int32_t klen, vlen, j
    cdef const uint8_t* p
    cdef list out = []
    rd_init(&hr, v.headers, v.headers_len, <PyObject*>w.topic, w.partition, v.offset)
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


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)


cdef inline ConsumerRecord _make_record(_Walker w, RecView* v, bint untrack):
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
    rec._headers = _headers_list(w, v) if v.header_count > 0 else None
    rec._leader_epoch = w.epoch
    rec.serialized_key_size = v.key_len
    rec.serialized_value_size = v.value_len
    if untrack:
        PyObject_GC_UnTrack(<void*>rec)    # no cycle can pass through it (see ConsumerRecord)
    return rec


cdef Py_ssize_t _snappy_len(Reader* r, Py_ssize_t at, Py_ssize_t n) except -1:
    """The uncompressed length that prefixes a raw snappy block (unsigned varint)."""
    cdef uint64_t v = 0
    cdef uint64_t b
    cdef Py_ssize_t i = 0
    while True:
        if i >= n or i >= 5:
            r.pos = at
            rd_fail(r, "Malformed snappy block length")
        b = r.buf[at + i]
        v |= (b & 0x7F) << (7 * i)
        i += 1
        if b < 0x80:
            return <Py_ssize_t>v


def _aborted_entry(t):
    """(first_offset, producer_id) from a (producer_id, first_offset) pair or an object with
    producer_id / first_offset attributes (a FetchResponse AbortedTransaction)."""
    if hasattr(t, "producer_id"):
        return (int(t.first_offset), int(t.producer_id))
    pid, first = t
    return (int(first), int(pid))


# --------------------------------------------------------------------------- the walker

@cython.final
cdef class _Walker:
    def __cinit__(self, object record_set, str topic, int32_t partition, int64_t fetch_offset,
                  bint check_crcs, str isolation_level, object aborted_transactions):
        cdef _RawBuffer* mv
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
                self.data = <const uint8_t*>mv.buf
                self.length = mv.len
        if not self.has_view:
            PyObject_GetBuffer(record_set, &self.view, PyBUF_SIMPLE)
            self.has_view = True
            self.owner = record_set
            self.data = <const uint8_t*>self.view.buf
            self.length = self.view.len
        self.pos = 0
        self.topic = topic
        self.partition = partition
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
        self.error = None
        self.cut_offset = -1
        self.cut_size = -1
        self.cut_have = 0
        self.remaining = 0
        self.epoch = -1
        self.ts_type = -1
        self.region_owner = None
        self.dbuf = None
        self.ratio = 4.0
        self.legacy_inner = False
        rd_init(&self.rr, <const uint8_t*>"", 0, <PyObject*>self.topic, partition, -1)

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False

    cdef int fail(self, str msg, int64_t offset) except -1:
        raise CorruptRecordError(msg, topic=self.topic, partition=self.partition,
                                 offset=offset if offset >= 0 else None)

    cdef int set_region(self, const uint8_t* p, Py_ssize_t n, int64_t off) noexcept nogil:
        rd_init(&self.rr, p, n, <PyObject*>self.topic, self.partition, off)
        return 0

    # ---------------------------------------------------------------- batches

    cdef int load_batch(self) except -1:
        cdef const uint8_t* b
        cdef Py_ssize_t left, size
        cdef int32_t length, count, last_delta
        cdef int16_t attrs
        cdef int64_t base, pid, last_offset
        cdef int magic, codec
        cdef uint32_t crc
        cdef Reader hr
        while True:
            left = self.length - self.pos
            if left <= 0:
                return 0
            b = self.data + self.pos
            if left < LOG_OVERHEAD:
                # a partial trailing header: the size is unknown
                self._incomplete(<int64_t>pyx_be64(b) if left >= 8 else -1, -1, left)
                return 0
            base = <int64_t>pyx_be64(b)
            length = <int32_t>pyx_be32(b + 8)
            if length < HEADER_UP_TO_MAGIC - LOG_OVERHEAD:
                self.fail(f"Invalid batch length {length}", base)
            size = LOG_OVERHEAD + <Py_ssize_t>length
            if size > left:
                # partial trailing batch (a fetch size limit, or a log cut mid-batch)
                self._incomplete(base, size, left)
                return 0
            magic = <int8_t>b[16]
            if magic == 2:
                if length < V2_MIN_LENGTH:
                    self.fail(f"Record batch length {length} is smaller than the minimum "
                              f"{V2_MIN_LENGTH}", base)
                self.pos += size
                attrs = <int16_t>pyx_be16(b + V2_ATTRS_AT)
                last_delta = <int32_t>pyx_be32(b + V2_LAST_DELTA_AT)
                count = <int32_t>pyx_be32(b + V2_COUNT_AT)
                pid = <int64_t>pyx_be64(b + V2_PID_AT)
                last_offset = base + last_delta
                if self.check_crcs:
                    crc = _crc32c(PyMemoryView_FromMemory(<char*>(b + V2_ATTRS_AT),
                                                          size - V2_ATTRS_AT, PyBUF_READ))
                    if crc != pyx_be32(b + V2_CRC_AT):
                        self.fail(f"Record batch CRC32C mismatch: stored {pyx_be32(b + V2_CRC_AT)}"
                                  f", computed {crc}", base)
                if count < 0:
                    self.fail(f"Invalid record count {count}", base)
                self.have_batch = True
                self.batch_next_offset = last_offset + 1
                self.magic = 2
                self.base_offset = base
                self.epoch = <int32_t>pyx_be32(b + 12)
                if self.epoch < 0:
                    self.epoch = -1
                self.base_ts = <int64_t>pyx_be64(b + V2_BASE_TS_AT)
                self.max_ts = <int64_t>pyx_be64(b + V2_MAX_TS_AT)
                self.ts_type = 1 if attrs & ATTR_LOG_APPEND else 0
                codec = attrs & ATTR_CODEC
                if codec > 4:
                    raise UnsupportedCodecError(
                        f"Unknown compression codec id {codec} in record batch",
                        topic=self.topic, partition=self.partition, offset=base)
                self.remaining = 0
                if self.read_committed and pid >= 0:
                    # Java CompletedFetch: activate aborted transactions starting at or
                    # before this batch's last offset, then honour markers / drop batches.
                    while (self.aborted_idx < len(self.aborted)
                           and self.aborted[self.aborted_idx][0] <= last_offset):
                        self.aborted_pids.add(self.aborted[self.aborted_idx][1])
                        self.aborted_idx += 1
                    if attrs & ATTR_CONTROL:
                        if count > 0:
                            self._load_region(b, size, count, codec, base)
                            if self.is_abort_marker():
                                self.aborted_pids.discard(pid)
                    elif (attrs & ATTR_TXN) and pid in self.aborted_pids:
                        self.remaining = 0
                        if self.batch_next_offset > self.next_fetch_offset:
                            self.next_fetch_offset = self.batch_next_offset
                        continue
                if attrs & ATTR_CONTROL:
                    # control records are never handed out; they still advance the position
                    self.remaining = 0
                    if self.batch_next_offset > self.next_fetch_offset:
                        self.next_fetch_offset = self.batch_next_offset
                    continue
                if count == 0 or last_offset < self.next_fetch_offset:
                    continue                   # empty, or entirely below the fetch offset
                self._load_region(b, size, count, codec, base)
                return 1
            elif magic == 0 or magic == 1:
                if self._load_legacy(b, size, magic, base):
                    return 1
                continue
            else:
                self.fail(f"Unknown record batch magic {magic}", base)

    cdef void _incomplete(self, int64_t offset, Py_ssize_t size, Py_ssize_t have) noexcept:
        self.cut_offset = offset
        self.cut_size = size
        self.cut_have = have

    cdef int _load_region(self, const uint8_t* b, Py_ssize_t size, int32_t count, int codec,
                          int64_t base) except -1:
        """Point the record reader at the batch's records (decompressing when needed)."""
        cdef Py_ssize_t n
        if codec == 0:
            self.region_owner = None
            self.set_region(b + V2_HEADER, size - V2_HEADER, base)
        else:
            self.decompress(codec, b + V2_HEADER, size - V2_HEADER, base)
        n = self.rr.end
        if <Py_ssize_t>count > n // V2_MIN_RECORD:
            self.fail(f"Record count {count} cannot fit in {n} bytes of records", base)
        self.remaining = count
        return 0

    cdef int is_abort_marker(self) except -1:
        cdef RecView v
        cdef Py_ssize_t save = self.rr.pos
        cdef int32_t rem = self.remaining
        cdef int16_t ctype
        self.read_v2(&v)
        self.rr.pos = save
        self.remaining = rem
        if v.key_len < 4:
            self.fail("Control record key shorter than 4 bytes", v.offset)
        ctype = <int16_t>pyx_be16(v.key + 2)
        return 1 if ctype == 0 else 0          # ControlRecordType ABORT = 0, COMMIT = 1

    cdef int _load_legacy(self, const uint8_t* b, Py_ssize_t size, int magic,
                          int64_t base) except -1:
        """A top-level v0/v1 message: itself as a one-record batch, or a wrapper's inner set."""
        cdef Reader r
        cdef int8_t attrs
        cdef int32_t klen, vlen, isize, count
        cdef int64_t ts = -1, ioff, last_rel
        cdef uint32_t crc
        cdef int codec
        cdef const uint8_t* val
        cdef Py_ssize_t minsize = V1_MIN_SIZE if magic == 1 else V0_MIN_SIZE
        if size - LOG_OVERHEAD < minsize:
            self.fail(f"Message size {size - LOG_OVERHEAD} is smaller than the minimum "
                      f"{minsize} for magic {magic}", base)
        self.pos += size
        if self.check_crcs:
            crc = pyx_crc32(b + 16, size - 16)
            if crc != pyx_be32(b + 12):
                self.fail(f"Message CRC32 mismatch: stored {pyx_be32(b + 12)}, computed {crc}",
                          base)
        rd_init(&r, b, size, <PyObject*>self.topic, self.partition, base)
        r.pos = 17
        rd_i8(&r, &attrs)
        if magic == 1:
            rd_i64(&r, &ts)
        codec = attrs & ATTR_CODEC
        self.have_batch = True
        self.batch_next_offset = base + 1
        self.magic = magic
        self.base_offset = base
        self.epoch = -1
        self.legacy_log_append = magic == 1 and (attrs & ATTR_LOG_APPEND) != 0
        self.ts_type = -1 if magic == 0 else (1 if self.legacy_log_append else 0)
        self.wrapper_ts = ts
        self.remaining = 0
        if codec == 0:
            if base < self.next_fetch_offset:
                return 0
            self.legacy_inner = False
            self.region_owner = None
            self.set_region(b, size, base)
            self.remaining = 1
            return 1
        if codec > 3:
            raise UnsupportedCodecError(
                f"Unknown compression codec id {codec} for a magic {magic} message",
                topic=self.topic, partition=self.partition, offset=base)
        rd_i32(&r, &klen)
        if klen < -1:
            self.fail(f"Invalid key length {klen}", base)
        if klen > 0:
            rd_skip(&r, klen)
        rd_i32(&r, &vlen)
        if vlen < 0:
            self.fail("Compressed message has a null value", base)
        val = rd_bytes(&r, vlen)
        if r.pos != r.end:
            self.fail("Message size does not match its key and value lengths", base)
        self.decompress(codec, val, vlen, base)
        # Walk the inner set's headers: count messages and find the last inner offset.
        count = 0
        last_rel = -1
        rd_init(&r, self.rr.buf, self.rr.end, <PyObject*>self.topic, self.partition, base)
        while r.pos < r.end:
            rd_i64(&r, &ioff)
            rd_i32(&r, &isize)
            if isize < V0_MIN_SIZE:
                self.fail(f"Inner message size {isize} is smaller than the minimum", base)
            rd_skip(&r, isize)
            last_rel = ioff
            count += 1
        if count == 0:
            return 0
        self.legacy_inner = True
        # v1 inner offsets are relative to (wrapper offset - last inner offset); like Java and
        # kafka-python, a negative base (a wrapper not offset-assigned by a broker) means the
        # inner offsets are taken as they are, which is also what v0 does.
        self.legacy_adjust = base - last_rel if magic == 1 else -1
        self.legacy_relative = self.legacy_adjust >= 0
        self.batch_next_offset = (base if self.legacy_relative else last_rel) + 1
        self.remaining = count
        return 1

    cdef int decompress(self, int codec, const uint8_t* src, Py_ssize_t n,
                        int64_t off) except -1:
        cdef Py_ssize_t guess, cap, got, limit = _max_decompressed
        cdef const uint8_t* p
        cdef bytearray fixed
        src_mv = PyMemoryView_FromMemory(<char*>src, n, PyBUF_READ)
        name = _CODEC_NAMES.get(codec, str(codec))
        try:
            if codec == 2:
                got = self._snappy(src, n, src_mv, off)
            else:
                if codec == 1:
                    mod = cramjam.gzip
                    guess = 0
                    if n >= 18:    # gzip trailer ISIZE: uncompressed size mod 2^32, little-endian
                        guess = (<Py_ssize_t>src[n - 4] | (<Py_ssize_t>src[n - 3] << 8)
                                 | (<Py_ssize_t>src[n - 2] << 16) | (<Py_ssize_t>src[n - 1] << 24))
                        if guess > n * 1032:   # deflate cannot expand more than 1032:1
                            guess = 0
                    guess += 64
                elif codec == 3:
                    mod = cramjam.lz4
                    guess = 0
                    if self.magic == 0 and n >= 7 and pyx_be32(src) == 0x04224D18:
                        # Kafka's magic-0 writer hashed the frame magic into the header
                        # checksum (KAFKA-3160); recompute it so the frame decoder accepts it.
                        fixed = bytearray(src_mv)
                        hlen = 2 + (8 if fixed[4] & 0x08 else 0) + (4 if fixed[4] & 0x01 else 0)
                        if 4 + hlen < n:
                            fixed[4 + hlen] = (pyx_xxh32_short(<const uint8_t*>src + 4, hlen)
                                               >> 8) & 0xFF
                        src_mv = memoryview(fixed)
                else:
                    mod = cramjam.zstd
                    guess = 0
                if guess <= 0 or guess > limit:
                    guess = <Py_ssize_t>(n * self.ratio) + 1024
                while True:
                    cap = min(guess, limit)
                    if self.dbuf is None or len(self.dbuf) < cap:
                        self.dbuf = bytearray(cap)
                    try:
                        got = mod.decompress_into(src_mv, self.dbuf)
                        break
                    except cramjam.DecompressionError as e:
                        if "failed to write whole buffer" not in str(e):
                            raise
                        if len(self.dbuf) >= limit:
                            self.fail(f"Decompressed {name} batch exceeds the limit of {limit} "
                                      f"bytes (set_max_decompressed_size)", off)
                        guess = len(self.dbuf) * 2
        except CorruptRecordError:
            raise
        except Exception as e:
            raise CorruptRecordError(f"Cannot decompress {name} batch: {e}", topic=self.topic,
                                     partition=self.partition, offset=off) from e
        if n > 0 and got / <double>n > self.ratio:
            self.ratio = got / <double>n
        self.region_owner = self.dbuf
        p = <const uint8_t*><char*>self.dbuf
        self.set_region(p, got, off)
        return 0

    cdef Py_ssize_t _snappy(self, const uint8_t* src, Py_ssize_t n, object src_mv,
                            int64_t off) except -1:
        """Raw snappy, or Java's xerial framing: magic, 2 ints, then [int32 length][block]."""
        cdef Reader r
        cdef Py_ssize_t total = 0, at, blen
        cdef int32_t bl
        cdef list blocks = []
        rd_init(&r, src, n, <PyObject*>self.topic, self.partition, off)
        if n >= 16 and src_mv[:8] == _XERIAL_MAGIC:
            r.pos = 16
            while r.pos < r.end:
                rd_i32(&r, &bl)
                at = r.pos
                rd_skip(&r, bl)
                blen = _snappy_len(&r, at, bl)
                if blen > 64 * <Py_ssize_t>bl + 64:   # snappy expands at most ~22:1
                    self.fail(f"Snappy block claims {blen} bytes from {bl} compressed", off)
                blocks.append((at, bl, blen))
                total += blen
        else:
            blen = _snappy_len(&r, 0, n)
            if blen > 64 * n + 64:
                self.fail(f"Snappy block claims {blen} bytes from {n} compressed", off)
            blocks.append((0, n, blen))
            total = blen
        if total > _max_decompressed:
            self.fail(f"Decompressed snappy batch exceeds the limit of {_max_decompressed} bytes"
                      f" (set_max_decompressed_size)", off)
        if self.dbuf is None or len(self.dbuf) < total:
            self.dbuf = bytearray(total)
        out = memoryview(self.dbuf)
        at = 0
        for (s, l, blen) in blocks:
            if cramjam.snappy.decompress_raw_into(src_mv[s:s + l], out[at:at + blen]) != blen:
                self.fail("Snappy block shorter than its declared length", off)
            at += blen
        out.release()
        return total

    # ---------------------------------------------------------------- records

    cdef int read_v2(self, RecView* v) except -1 nogil:
        # Works on a local copy of the reader so the compiler keeps it in registers.
        cdef Reader rl = self.rr
        cdef Reader* r = &rl
        cdef int32_t length, odelta, klen, vlen, hcount, hk, hv, j
        cdef int64_t tdelta, off
        cdef Py_ssize_t start, hstart
        r.offset = self.base_offset
        rd_varint(r, &length)
        if length < 0 or length > r.end - r.pos:
            return rd_fail_nogil(r, 0 if length >= 0 else 2, length)
        start = r.pos
        r.pos += 1                             # record attributes: unused
        rd_varlong(r, &tdelta)
        rd_varint(r, &odelta)
        off = <int64_t>(<uint64_t>self.base_offset + <uint64_t><int64_t>odelta)
        r.offset = off
        rd_varint(r, &klen)
        if klen >= 0:
            v.key = rd_bytes(r, klen)
        elif klen == -1:
            v.key = NULL
        else:
            return rd_fail_nogil(r, 2, klen)
        rd_varint(r, &vlen)
        if vlen >= 0:
            v.value = rd_bytes(r, vlen)
        elif vlen == -1:
            v.value = NULL
        else:
            return rd_fail_nogil(r, 2, vlen)
        rd_varint(r, &hcount)
        if hcount != 0:
            if hcount < 0:
                return rd_fail_nogil(r, 2, hcount)
            hstart = r.pos
            for j in range(hcount):
                rd_varint(r, &hk)
                rd_skip(r, hk)
                rd_varint(r, &hv)
                if hv >= 0:
                    rd_skip(r, hv)
                elif hv != -1:
                    return rd_fail_nogil(r, 2, hv)
            v.headers = r.buf + hstart
            v.headers_len = r.pos - hstart
        v.header_count = hcount
        if r.pos - start != length:
            self.rr = rl
            with gil:
                self.fail(f"Record length {length} does not match its fields "
                          f"({r.pos - start} bytes)", off)
        v.offset = off
        v.timestamp = (self.max_ts if self.ts_type == 1
                       else <int64_t>(<uint64_t>self.base_ts + <uint64_t>tdelta))
        v.key_len = klen
        v.value_len = vlen
        self.rr.pos = r.pos
        return 0

    cdef int read_legacy(self, RecView* v) except -1 nogil:
        cdef Reader* r = &self.rr
        cdef int64_t off, ts = -1
        cdef int32_t size, klen, vlen
        cdef int8_t magic, attrs
        cdef Py_ssize_t start, end
        cdef uint32_t crc
        r.offset = self.base_offset
        rd_i64(r, &off)
        rd_i32(r, &size)
        if size < V0_MIN_SIZE:
            return rd_fail_nogil(r, 2, size)
        start = r.pos
        rd_need(r, size)
        end = start + size
        r.pos += 4
        rd_i8(r, &magic)
        rd_i8(r, &attrs)
        if self.legacy_inner:
            if self.legacy_relative:
                off = self.legacy_adjust + off
            r.offset = off
            if magic != 0 and magic != 1:
                with gil:
                    self.fail(f"Inner message has magic {magic}", off)
            if attrs & ATTR_CODEC:
                with gil:
                    self.fail("Compressed inner message inside a compressed wrapper", off)
            if self.check_crcs:
                crc = pyx_crc32(r.buf + start + 4, size - 4)
                if crc != pyx_be32(r.buf + start):
                    with gil:
                        self.fail(f"Message CRC32 mismatch: stored {pyx_be32(r.buf + start)}, "
                                  f"computed {crc}", off)
        r.offset = off
        if magic == 1:
            rd_i64(r, &ts)
        v.offset = off
        v.timestamp = self.wrapper_ts if self.legacy_log_append else (ts if magic == 1 else -1)
        rd_i32(r, &klen)
        if klen >= 0:
            v.key = rd_bytes(r, klen)
        elif klen == -1:
            v.key = NULL
        else:
            return rd_fail_nogil(r, 2, klen)
        v.key_len = klen
        rd_i32(r, &vlen)
        if vlen >= 0:
            v.value = rd_bytes(r, vlen)
        elif vlen == -1:
            v.value = NULL
        else:
            return rd_fail_nogil(r, 2, vlen)
        v.value_len = vlen
        v.headers = NULL
        v.headers_len = 0
        v.header_count = 0
        if r.pos != end:
            with gil:
                self.fail(f"Message size {size} does not match its fields", off)
        return 0

    cdef int read_record(self, RecView* v) except -1 nogil:
        self.undo_pos = self.rr.pos
        self.undo_remaining = self.remaining
        self.undo_nfo = self.next_fetch_offset
        self.undo_epoch = self.last_epoch
        if self.magic == 2:
            self.read_v2(v)
        else:
            self.read_legacy(v)
        self.remaining -= 1
        if self.remaining == 0 and self.rr.pos != self.rr.end:
            with gil:
                self.fail(f"Incorrect declared batch size: {self.rr.end - self.rr.pos} bytes "
                          f"remain after the last record", self.base_offset)
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

    cdef int advance(self) except -1:
        if self.finished:
            return 0
        if self.load_batch():
            return 1
        if self.have_batch and self.batch_next_offset > self.next_fetch_offset:
            self.next_fetch_offset = self.batch_next_offset   # compaction gap / control at end
        self.finished = True
        self.region_owner = None
        self.dbuf = None
        return 0

    cdef int maybe_finish(self) except -1:
        """Finish now if the current batch is used up and no complete batch follows; never
        while an error is pending (the position must stay before the bad data)."""
        cdef Py_ssize_t left
        cdef int32_t length
        if self.finished or self.remaining > 0 or self.error is not None:
            return 0
        left = self.length - self.pos
        if left >= LOG_OVERHEAD:
            length = <int32_t>pyx_be32(self.data + self.pos + 8)
            if (length < HEADER_UP_TO_MAGIC - LOG_OVERHEAD
                    or LOG_OVERHEAD + <Py_ssize_t>length <= left):
                return 0                       # a batch follows (or corruption to report)
        self.advance()
        return 1

    cdef int fill_arrow(self, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil:
        cdef RecView v
        cdef int r
        while self.remaining > 0 and b.n < max_rows:
            if self.read_record(&v):
                r = b.add(&v, self.ts_type)
                if r != 1:
                    self.undo()        # full (2 GiB) or the data buffers must grow first
                    return r
        return 1

    cdef int fill_arrow_v2(self, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil:
        """fill_arrow for a magic-2 batch without headers: parse and write in one loop,
        with the cursor and the column state in locals (registers). Same checks as read_v2."""
        cdef Reader rl = self.rr
        cdef Reader* r = &rl
        cdef int32_t remaining = self.remaining, length, odelta, klen, vlen, hcount, hk, hv, j
        cdef int64_t nfo = self.next_fetch_offset, base_off = self.base_offset, off, tdelta
        cdef int64_t base_ts = self.base_ts, max_ts = self.max_ts
        cdef bint log_append = self.ts_type == 1
        cdef int32_t ts_type = self.ts_type
        cdef Py_ssize_t n = b.n, n0 = b.n, ku = b.key_used, vu = b.val_used
        cdef Py_ssize_t kcap = b.kd_cap, vcap = b.vd_cap, knull = 0, vnull = 0, start, rec_at
        cdef const uint8_t* kp
        cdef const uint8_t* vp
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
        while remaining > 0 and n < max_rows:
            rec_at = r.pos
            r.offset = base_off
            rd_varint(r, &length)
            if length < 0 or length > r.end - r.pos:
                return rd_fail_nogil(r, 0 if length >= 0 else 2, length)
            start = r.pos
            r.pos += 1                         # record attributes: unused
            rd_varlong(r, &tdelta)
            rd_varint(r, &odelta)
            off = <int64_t>(<uint64_t>base_off + <uint64_t><int64_t>odelta)
            r.offset = off
            rd_varint(r, &klen)
            if klen >= 0:
                kp = rd_bytes(r, klen)
            elif klen == -1:
                kp = NULL
            else:
                return rd_fail_nogil(r, 2, klen)
            rd_varint(r, &vlen)
            if vlen >= 0:
                vp = rd_bytes(r, vlen)
            elif vlen == -1:
                vp = NULL
            else:
                return rd_fail_nogil(r, 2, vlen)
            rd_varint(r, &hcount)
            if hcount != 0:
                if hcount < 0:
                    return rd_fail_nogil(r, 2, hcount)
                for j in range(hcount):
                    rd_varint(r, &hk)
                    rd_skip(r, hk)
                    rd_varint(r, &hv)
                    if hv >= 0:
                        rd_skip(r, hv)
                    elif hv != -1:
                        return rd_fail_nogil(r, 2, hv)
            if r.pos - start != length:
                with gil:
                    self.fail(f"Record length {length} does not match its fields "
                              f"({r.pos - start} bytes)", off)
            if remaining == 1 and r.pos != r.end:
                with gil:
                    self.fail(f"Incorrect declared batch size: {r.end - r.pos} bytes "
                              f"remain after the last record", base_off)
            if off < nfo:
                remaining -= 1
                continue                       # below the fetch position
            if ku + klen > kcap or vu + vlen > vcap:
                r.pos = rec_at                 # not taken: grow (or end the batch) first
                if ku + klen > INT32_MAX or vu + vlen > INT32_MAX:
                    b.full = True
                    result = 0
                else:
                    b.need_key = klen if klen > 0 else 0
                    b.need_val = vlen if vlen > 0 else 0
                    result = 2
                break
            remaining -= 1
            p_off[n] = off
            # unsigned arithmetic: a hostile timestamp wraps instead of being undefined
            p_ts[n] = <int64_t>((<uint64_t>max_ts if log_append
                                 else <uint64_t>base_ts + <uint64_t>tdelta) * 1000)
            p_tt[n] = ts_type
            if klen >= 0:
                pyx_copy(p_kd + ku, kp, klen)
                ku += klen
                _set_bit(p_kv, n)
            else:
                knull += 1
            p_ko[n + 1] = <int32_t>ku
            if vlen >= 0:
                pyx_copy(p_vd + vu, vp, vlen)
                vu += vlen
                _set_bit(p_vv, n)
            else:
                vnull += 1
            p_vo[n + 1] = <int32_t>vu
            nfo = off + 1
            n += 1
        self.rr.pos = r.pos
        self.remaining = remaining
        self.next_fetch_offset = nfo
        if n > n0:
            self.last_epoch = self.epoch
        b.n = n
        b.key_used = ku
        b.val_used = vu
        b.key_nulls += knull
        b.val_nulls += vnull
        return result

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
            if not self.read_record(&v):
                continue
            rec = _make_record(self, &v, not des)
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
        cdef Py_ssize_t rows_est = 0, bytes_est = 0, left, at
        cdef int32_t length, count
        cdef int16_t attrs
        cdef Py_ssize_t plain_est = 0, comp_est = 0
        cdef _ArrowBuilder b
        # Size the columns from the batch headers still ahead (uncompressed batches give a
        # tight bound on key+value bytes); compressed batches grow the buffers as they come.
        if self.remaining > 0:
            rows_est = self.remaining
            bytes_est = self.rr.end - self.rr.pos
            plain_est = bytes_est              # already decompressed when compressed
        at = self.pos
        while at + V2_HEADER <= self.length and rows_est < max_rows:
            length = <int32_t>pyx_be32(self.data + at + 8)
            if length < V2_MIN_LENGTH or at + LOG_OVERHEAD + length > self.length:
                break
            if self.data[at + 16] != 2:
                break
            attrs = <int16_t>pyx_be16(self.data + at + V2_ATTRS_AT)
            count = <int32_t>pyx_be32(self.data + at + V2_COUNT_AT)
            if count < 0:
                break
            if attrs & ATTR_CODEC == 0:
                if count > (length - V2_MIN_LENGTH) // V2_MIN_RECORD:
                    break
                rows_est += count
                bytes_est += length - V2_MIN_LENGTH - count * V2_MIN_RECORD
                plain_est += length - V2_MIN_LENGTH - count * V2_MIN_RECORD
            else:                              # a guess (never trusting count): buffers grow
                rows_est += min(count, (length - V2_MIN_LENGTH) // 2)
                bytes_est += (length - V2_MIN_LENGTH) * 3
                comp_est += length - V2_MIN_LENGTH
            at += LOG_OVERHEAD + length
        if rows_est > max_rows:
            bytes_est = <Py_ssize_t>(bytes_est * (<double>max_rows / rows_est))
            rows_est = max_rows
        b = _ArrowBuilder(rows_est, min(bytes_est, rows_est * 16), bytes_est, include_headers)
        b.plain_bytes = plain_est
        b.comp_bytes = comp_est
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
                    self.fill_arrow_v2(b, max_rows)
            else:
                with nogil:
                    self.fill_arrow(b, max_rows)
            if (not b.reprojected and b.comp_bytes > 0 and self.remaining == 0
                    and self.region_owner is not None and b.n > 0):
                b.reproject(self.ratio)
        return 0


# --------------------------------------------------------------------------- public API

@cython.final
cdef class CompletedFetch:
    """One partition's fetched record set, handed out at most N records per take."""

    def __init__(self, record_set, str topic, int32_t partition, int64_t fetch_offset, *,
                 bint check_crcs=True, str isolation_level="read_uncommitted",
                 aborted_transactions=None, bint include_headers=False,
                 key_deserializer=None, value_deserializer=None):
        self.w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                         isolation_level, aborted_transactions)
        self.include_headers = include_headers
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.discarded = False

    def take_records(self, Py_ssize_t max_records):
        """At most max_records ConsumerRecords, in offset order (empty when drained)."""
        if max_records < 0:
            raise ValueError(f"max_records must be >= 0, got {max_records}")
        if self.discarded or max_records == 0:
            return []
        return self.w.take_records(max_records, self.key_deserializer, self.value_deserializer)

    def take_arrow(self, Py_ssize_t max_records):
        """At most max_records rows as a pyarrow.RecordBatch (Spark's Kafka schema)."""
        if max_records < 0:
            raise ValueError(f"max_records must be >= 0, got {max_records}")
        if self.discarded or max_records == 0:
            return _ArrowBuilder(0, 0, 0, self.include_headers).finish(self.w.topic,
                                                                        self.w.partition)
        return self.w.take_arrow(max_records, self.include_headers)

    def set_include_headers(self, bint include_headers):
        """Whether later take_arrow calls build the headers column (poll_arrow asks per call;
        without headers, magic-2 batches take the faster fill path)."""
        self.include_headers = include_headers

    @property
    def next_fetch_offset(self):
        return self.w.next_fetch_offset

    @property
    def is_drained(self):
        if self.discarded:
            return True
        if self.w.error is not None:
            return False                       # the next take raises it: not drained
        if self.w.finished:
            return True
        self.w.maybe_finish()
        return self.w.finished

    @property
    def incomplete_batch(self):
        """(offset, declared size, bytes present) of the incomplete batch this record set
        ends with, once the cursor stopped there (the broker cut the batch at a size limit,
        or the log ends mid-batch); -1 for what the bytes do not say; None otherwise."""
        if self.w.cut_have == 0:
            return None
        return (self.w.cut_offset, self.w.cut_size, self.w.cut_have)

    @property
    def last_epoch(self):
        return None if self.w.last_epoch < 0 else self.w.last_epoch

    @property
    def topic(self):
        return self.w.topic

    @property
    def partition(self):
        return self.w.partition

    def discard(self):
        """Drop what is left; later takes return nothing and the position stays put."""
        self.discarded = True
        self.w.finished = True
        self.w.remaining = 0
        self.w.region_owner = None
        self.w.dbuf = None

    def __repr__(self):
        return (f"CompletedFetch(topic={self.w.topic!r}, partition={self.w.partition}, "
                f"next_fetch_offset={self.w.next_fetch_offset}, drained={self.is_drained})")


_NO_LIMIT = (1 << 62)


def decode_records(record_set, str topic, int32_t partition, *, bint check_crcs=True,
                   int64_t fetch_offset=0, str isolation_level="read_uncommitted",
                   aborted_transactions=None, key_deserializer=None, value_deserializer=None):
    """Every record of a record set as ConsumerRecords, in offset order."""
    cdef _Walker w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                             isolation_level, aborted_transactions)
    cdef list out = w.take_records(_NO_LIMIT, key_deserializer, value_deserializer)
    while not w.finished:
        # take_records stops early only before a record whose deserializer failed (it hands
        # out what it has first); taking again raises that RecordDeserializationError.
        out += w.take_records(_NO_LIMIT, key_deserializer, value_deserializer)
    return out


def decode_arrow(record_set, str topic, int32_t partition, *, bint check_crcs=True,
                 bint include_headers=False, int64_t fetch_offset=0,
                 str isolation_level="read_uncommitted", aborted_transactions=None):
    """Every record of a record set as one pyarrow.RecordBatch (Spark's Kafka schema)."""
    cdef _Walker w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                             isolation_level, aborted_transactions)
    batch = w.take_arrow(_NO_LIMIT, include_headers)
    if w.error is not None:
        raise w.error
    if not w.finished:
        raise OverflowError(
            f"record set of {topic}-{partition} has more than 2 GiB of keys or values, more than "
            f"one Arrow batch can hold; drain it with CompletedFetch.take_arrow instead")
    return batch
