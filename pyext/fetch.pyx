# --------------------------------------------------------------------------- Fetch responses
#
# decode_fetch_response walks a Fetch response body once (the fetch side's per-partition
# cost at thousands of partitions was the generic codec's per-field Python, issue 26). Its
# output is the generic codec's, value for value (tests/unit/test_fetch_response_decoder.py
# holds the two equal at every version): fields a version lacks hold their defaults, records
# are memoryview slices of the payload. With index=True it also builds each partition's
# RecordSetIndex from the bytes in hand (at fetch offset 0: the fetch side sets the offset it
# asked for, which judges the end and bound again from the entries, without a second walk).
#
# Errors are the generic codec's too: "Malformed FetchResponse v<V>: <what> at field <path>
# (byte <pos>)", the same what and path; the byte is the payload's (the generic codec counts
# bytes inside a tagged field from the field's first byte).

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.dict cimport PyDict_Copy
from cpython.unicode cimport PyUnicode_DecodeUTF8

import uuid as _uuid

FETCH_RESPONSE_VERSIONS = (0, FETCH_MAX_VERSION)     # what decode_fetch_response decodes

cdef object _UUID = _uuid.UUID
cdef object _ZERO_UUID = _UUID(int=0)
cdef dict _uuids = {}                  # 16 bytes -> UUID (immutable: shared), bounded
cdef Py_ssize_t _UUIDS_MAX = 4096

# default values of each struct, copied per struct read (PyDict_Copy of a small dict clones
# its key table); a default that is mutable is set fresh in every copy
cdef dict _TOP = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": None,
                  "node_endpoints": None}
cdef dict _TOPIC = {"topic": "", "topic_id": _ZERO_UUID, "partitions": None}
cdef dict _PARTITION = {
    "partition_index": 0, "error_code": 0, "high_watermark": 0, "last_stable_offset": -1,
    "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1,
    "records": None, "diverging_epoch": None, "current_leader": None, "snapshot_id": None}
cdef dict _DIVERGING = {"epoch": -1, "end_offset": -1}
cdef dict _LEADER = {"leader_id": -1, "leader_epoch": -1}
cdef dict _SNAPSHOT = {"end_offset": -1, "epoch": -1}
cdef dict _ENDPOINT = {"node_id": 0, "host": "", "port": 0, "rack": None}
# a partition's tagged structs by tag: their keys, and the same as C text for error paths
cdef tuple _TAGGED_KEYS = ("diverging_epoch", "current_leader", "snapshot_id")
cdef const char* _TAGGED_NAMES[3]
_TAGGED_NAMES[0] = "diverging_epoch"
_TAGGED_NAMES[1] = "current_leader"
_TAGGED_NAMES[2] = "snapshot_id"
cdef const char* _UVARINT = "unsigned varint"


cdef inline void _key(BodyPath* p, int level, const char* name) noexcept nogil:
    p.name[level] = name
    p.index[level] = -1
    p.depth = level + 1


cdef inline void _elem(BodyPath* p, int level, Py_ssize_t i) noexcept nogil:
    p.name[level] = NULL
    p.index[level] = i
    p.depth = level + 1


@cython.final
cdef class FetchResponseBody(dict):
    """A Fetch response body (a dict, the generic codec's), and ``indexes``: each partition's
    RecordSetIndex keyed by (its topic's position in ``responses``, its partition number),
    None for a key the response repeats (None when not asked for)."""
    pass


@cython.final
cdef class _FetchBody:
    """The decoder's state for one body: where it reads, for errors."""

    cdef str path_text(self):
        cdef int k
        cdef str out = ""
        for k in range(self.path.depth):
            if self.path.name[k] == NULL:
                out += f"[{self.path.index[k]}]"
            elif out:
                out += "." + self.path.name[k].decode("ascii")
            else:
                out = self.path.name[k].decode("ascii")
        return out or "<message>"

    cdef int fail(self, Py_ssize_t pos, str what) except -1:
        if KafkaProtocolError is _ErrorClassesNotSet:
            raise RuntimeError("pyconsumer._records has no error classes: import pyconsumer.records")
        raise KafkaProtocolError(f"Malformed FetchResponse v{self.version}: {what} at field "
                                 f"{self.path_text()} (byte {pos})")

    cdef int reader_fault(self, Py_ssize_t pos, int fault, int64_t a, int64_t b) except -1:
        """A reader's fault (on_fault hands it here), in the generic codec's words."""
        if self.what == _UVARINT:
            what = ("unsigned varint longer than 5 bytes" if fault == F_VARINT
                    else "unsigned varint runs past the end")
        elif fault == F_SHORT:
            kind = f"tagged field {self.tag}" if self.what == NULL else self.what.decode("ascii")
            what = f"{kind} needs {a} bytes, {b} left"
        elif fault == F_LENGTH:
            what = f"invalid length {a}"
        else:
            what = f"reader fault {fault} ({a}, {b})"
        return self.fail(pos, what)

    # ------------------------------------------------------------------ primitives

    cdef int i16(self, Reader* r, int16_t* out) except -1:
        self.what = "int16"
        return rd_i16(r, out)

    cdef int i32(self, Reader* r, int32_t* out) except -1:
        self.what = "int32"
        return rd_i32(r, out)

    cdef int i64(self, Reader* r, int64_t* out) except -1:
        self.what = "int64"
        return rd_i64(r, out)

    cdef int uvarint(self, Reader* r, uint64_t* out) except -1:
        # 5 bytes at most, as Kafka's readUnsignedVarint (the bits past 32 kept, as the
        # generic codec keeps them)
        self.what = _UVARINT
        return rd_uvarint(r, out, 5)

    cdef int length(self, Reader* r, bint string, int64_t* n) except -1:
        """A length prefix, -1 for null: compact (unsigned varint n + 1) when flexible, else
        int16 for a string, int32 for bytes and arrays."""
        cdef uint64_t u
        cdef int16_t s
        cdef int32_t i
        if self.flexible:
            self.uvarint(r, &u)
            n[0] = <int64_t>u - 1
        elif string:
            self.i16(r, &s)
            n[0] = s
        else:
            self.i32(r, &i)
            n[0] = i
        return 0

    cdef object string(self, Reader* r, bint nullable):
        cdef int64_t n
        cdef const uint8_t* p
        self.length(r, True, &n)
        if n < 0:
            if n == -1 and nullable:
                return None
            self.fail(r.pos, f"string length {n}" + ("" if nullable else " (not nullable)"))
        self.what = "string"
        p = rd_bytes(r, <Py_ssize_t>n)
        try:
            return PyUnicode_DecodeUTF8(<const char*>p, <Py_ssize_t>n, NULL)
        except UnicodeDecodeError as e:
            self.fail(r.pos - <Py_ssize_t>n, f"string is not valid UTF-8 ({e.reason})")

    cdef object uuid(self, Reader* r):
        cdef const uint8_t* p
        self.what = "uuid"
        p = rd_bytes(r, 16)
        key = (<const char*>p)[:16]
        u = _uuids.get(key)
        if u is None:
            if len(_uuids) >= _UUIDS_MAX:
                _uuids.clear()
            u = _uuids[key] = _UUID(bytes=key)
        return u

    cdef int array(self, Reader* r, bint nullable, int64_t* n) except -1:
        """An array's length (-1: null, when nullable), no more than the bytes left."""
        self.length(r, False, n)
        if n[0] < 0:
            if n[0] == -1 and nullable:
                return 0
            self.fail(r.pos, f"array length {n[0]}" + ("" if nullable else " (not nullable)"))
        if n[0] > rd_left(r):      # every element takes a byte at least: refuse, don't allocate
            self.fail(r.pos, f"array of {n[0]} elements in {rd_left(r)} bytes")
        return 0

    # ------------------------------------------------------------------ tagged fields

    cdef int tags(self, Reader* r, int level, int owner, dict out) except -1:
        """The tagged fields of a struct at path level ``level``: the known ones of owner (0:
        none, 1: the body, 2: a partition) read into out, others skipped (as Kafka does)."""
        cdef uint64_t count, tag, size, k
        cdef int64_t last = -1
        cdef Reader sub
        _key(&self.path, level, "_tagged_fields")
        self.uvarint(r, &count)
        if count > <uint64_t>rd_left(r):
            self.fail(r.pos, f"{count} tagged fields in {rd_left(r)} bytes")
        for k in range(count):
            self.uvarint(r, &tag)
            if <int64_t>tag <= last:
                self.fail(r.pos, f"tagged field {tag} out of order (after {last})")
            last = <int64_t>tag
            self.uvarint(r, &size)
            self.what = NULL
            self.tag = <int64_t>tag
            rd_sub(r, &sub, <Py_ssize_t>size)
            if owner == 2 and tag <= 2:
                _key(&self.path, level + 1, _TAGGED_NAMES[tag])
                out[_TAGGED_KEYS[tag]] = self.tagged_struct(&sub, level + 2, <int>tag)
                _key(&self.path, level, "_tagged_fields")
            elif owner == 1 and tag == 0 and self.version >= FETCH_ENDPOINTS:
                _key(&self.path, level + 1, "node_endpoints")
                out["node_endpoints"] = self.endpoints(&sub, level + 1)
                _key(&self.path, level, "_tagged_fields")
        return 0

    cdef dict tagged_struct(self, Reader* r, int level, int tag):
        """The partition's tagged struct ``tag`` (0 diverging_epoch, 1 current_leader, 2
        snapshot_id): its two fields, then its own tagged fields."""
        cdef int32_t i, j
        cdef int64_t v
        cdef dict d
        if tag == 0:
            d = PyDict_Copy(_DIVERGING)
            _key(&self.path, level, "epoch")
            self.i32(r, &i)
            d["epoch"] = i
            _key(&self.path, level, "end_offset")
            self.i64(r, &v)
            d["end_offset"] = v
        elif tag == 1:
            d = PyDict_Copy(_LEADER)
            _key(&self.path, level, "leader_id")
            self.i32(r, &i)
            d["leader_id"] = i
            _key(&self.path, level, "leader_epoch")
            self.i32(r, &j)
            d["leader_epoch"] = j
        else:
            d = PyDict_Copy(_SNAPSHOT)
            _key(&self.path, level, "end_offset")
            self.i64(r, &v)
            d["end_offset"] = v
            _key(&self.path, level, "epoch")
            self.i32(r, &i)
            d["epoch"] = i
        self.tags(r, level, 0, d)
        return d

    cdef list endpoints(self, Reader* r, int level):
        cdef int64_t n, k
        cdef int32_t i
        cdef dict d
        cdef list out = []
        self.array(r, False, &n)
        for k in range(n):
            _elem(&self.path, level + 1, k)
            d = PyDict_Copy(_ENDPOINT)
            _key(&self.path, level + 2, "node_id")
            self.i32(r, &i)
            d["node_id"] = i
            _key(&self.path, level + 2, "host")
            d["host"] = self.string(r, False)
            _key(&self.path, level + 2, "port")
            self.i32(r, &i)
            d["port"] = i
            _key(&self.path, level + 2, "rack")
            d["rack"] = self.string(r, True)
            self.tags(r, level + 2, 0, d)
            out.append(d)
        return out

    # ------------------------------------------------------------------ the body

    cdef object aborted(self, Reader* r):
        cdef int64_t n, k, v
        cdef dict d
        cdef list out
        self.array(r, True, &n)
        if n < 0:
            return None
        out = []
        for k in range(n):
            _elem(&self.path, 5, k)
            _key(&self.path, 6, "producer_id")
            self.i64(r, &v)
            pid = v
            _key(&self.path, 6, "first_offset")
            self.i64(r, &v)
            d = {"producer_id": pid, "first_offset": v}
            if self.flexible:
                self.tags(r, 6, 0, d)
            out.append(d)
        return out

    cdef dict partition(self, Reader* r):
        cdef int16_t s
        cdef int32_t i
        cdef int64_t v, n
        cdef Py_ssize_t at
        cdef int32_t part
        cdef RecordSetIndex index
        cdef dict d = PyDict_Copy(_PARTITION)
        _key(&self.path, 4, "partition_index")
        self.i32(r, &part)
        d["partition_index"] = part
        _key(&self.path, 4, "error_code")
        self.i16(r, &s)
        d["error_code"] = s
        _key(&self.path, 4, "high_watermark")
        self.i64(r, &v)
        d["high_watermark"] = v
        if self.version >= 4:
            _key(&self.path, 4, "last_stable_offset")
            self.i64(r, &v)
            d["last_stable_offset"] = v
            if self.version >= 5:
                _key(&self.path, 4, "log_start_offset")
                self.i64(r, &v)
                d["log_start_offset"] = v
            _key(&self.path, 4, "aborted_transactions")
            d["aborted_transactions"] = self.aborted(r)
        else:
            d["aborted_transactions"] = []
        if self.version >= 11:
            _key(&self.path, 4, "preferred_read_replica")
            self.i32(r, &i)
            d["preferred_read_replica"] = i
        _key(&self.path, 4, "records")
        self.length(r, False, &n)
        if n < -1:
            self.fail(r.pos, f"bytes length {n}")
        if self.indexing:
            index = RecordSetIndex.__new__(RecordSetIndex)
        if n >= 0:
            self.what = "bytes"
            rd_need(r, <Py_ssize_t>n)
            at = r.pos
            r.pos += <Py_ssize_t>n
            d["records"] = self.view[at:r.pos]
            if self.indexing:
                index.build(self.data + at, <Py_ssize_t>n)
        elif self.indexing:
            index.build(<const uint8_t*>"", 0)
        if self.indexing:
            # keyed by where it was read, so that it travels with its partition
            key = (self.path.index[1], part)
            self.indexes[key] = None if key in self.indexes else index
        # (a two-key literal is built faster than a small dict is copied)
        d["diverging_epoch"] = {"epoch": -1, "end_offset": -1}
        d["current_leader"] = {"leader_id": -1, "leader_epoch": -1}
        d["snapshot_id"] = {"end_offset": -1, "epoch": -1}
        if self.flexible:
            self.tags(r, 4, 2, d)
        return d

    cdef dict topic(self, Reader* r):
        cdef int64_t n, k
        cdef list parts
        cdef dict d = PyDict_Copy(_TOPIC)
        if self.version >= FETCH_TOPIC_ID:
            _key(&self.path, 2, "topic_id")
            d["topic_id"] = self.uuid(r)
        else:
            _key(&self.path, 2, "topic")
            d["topic"] = self.string(r, False)
        _key(&self.path, 2, "partitions")
        self.array(r, False, &n)
        parts = []
        for k in range(n):
            _elem(&self.path, 3, k)
            parts.append(self.partition(r))
        d["partitions"] = parts
        if self.flexible:
            self.tags(r, 2, 0, d)
        return d

    cdef int body(self, Reader* r, dict out) except -1:
        cdef int16_t s
        cdef int32_t i
        cdef int64_t n, k
        cdef list topics
        if self.version >= 1:
            _key(&self.path, 0, "throttle_time_ms")
            self.i32(r, &i)
            out["throttle_time_ms"] = i
        if self.version >= 7:
            _key(&self.path, 0, "error_code")
            self.i16(r, &s)
            out["error_code"] = s
            _key(&self.path, 0, "session_id")
            self.i32(r, &i)
            out["session_id"] = i
        _key(&self.path, 0, "responses")
        self.array(r, False, &n)
        topics = []
        for k in range(n):
            _elem(&self.path, 1, k)
            topics.append(self.topic(r))
        out["responses"] = topics
        out["node_endpoints"] = []
        if self.flexible:
            self.tags(r, 0, 1, out)
        return 0


def decode_fetch_response(int version, payload, Py_ssize_t start=0, bint index=False):
    """The body of a Fetch response v``version`` (0-17) in ``payload`` (a bytes-like response
    frame without its length prefix) from byte ``start`` (past the header): the dict
    pyconsumer.protocol's generic codec gives, as a FetchResponseBody. With ``index``, its
    ``indexes`` hold each partition's RecordSetIndex by (topic position, partition), built in
    the same pass at fetch offset 0. Bytes after the body are ignored (as Kafka's readers do).
    Malformed bytes raise KafkaProtocolError naming the field and byte."""
    cdef _FetchBody c
    cdef Py_buffer buf
    cdef Reader r
    cdef FetchResponseBody out
    if not 0 <= version <= FETCH_MAX_VERSION:
        raise ValueError(f"Fetch v{version} is not a version the decoder knows (0-17)")
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if not 0 <= start <= len(view):
        raise ValueError(f"start {start} is outside the {len(view)} bytes of the payload")
    c = _FetchBody.__new__(_FetchBody)
    c.version = version
    c.flexible = version >= FETCH_FLEXIBLE
    c.view = view
    c.indexing = index
    c.indexes = {} if index else None
    c.path.depth = 0
    c.what = NULL
    c.where.topic = <PyObject*>c           # on_fault hands a reader's fault back to c
    c.where.partition = -1
    c.where.origin = 0
    c.where.inflated = False
    out = FetchResponseBody.__new__(FetchResponseBody)
    out.update(_TOP)
    PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
    try:
        c.data = <const uint8_t*>buf.buf
        rd_init(&r, c.data, buf.len, &c.where, -1)
        r.pos = start
        c.body(&r, out)
    finally:
        PyBuffer_Release(&buf)
        c.data = NULL
    out.indexes = c.indexes
    return out
