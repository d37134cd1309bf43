# The Fetch response body (v0-17) in one pass: the dicts the generic codec of
# pyconsumer.protocol gives (its reference), and each partition's RecordSetIndex built from
# the same bytes. Every read goes through reader.pxd; a reader's fault comes back through
# errors.pyx's on_fault, which hands it to the _FetchBody named as its Where's topic, and
# every error is the injected KafkaProtocolError naming the field's path and byte.

cdef enum:
    FETCH_MAX_VERSION = 17
    FETCH_FLEXIBLE = 12          # compact lengths and tagged fields from this version
    FETCH_TOPIC_ID = 13          # topics named by id from this version
    FETCH_ENDPOINTS = 16         # the top-level node_endpoints tag from this version
    PATH_MAX = 8                 # the deepest field path: responses[i].partitions[j].
                                 # _tagged_fields.diverging_epoch._tagged_fields


ctypedef struct BodyPath:
    # the field being read, for errors: level k is a key (name[k]) or an element ([index[k]])
    int depth
    const char* name[PATH_MAX]
    Py_ssize_t index[PATH_MAX]


cdef class FetchResponseBody(dict):
    # each partition's RecordSetIndex by (its topic's position in the response, its partition
    # number); None for a key the response repeats; the whole dict None when not asked for
    cdef readonly dict indexes


cdef class _FetchBody:
    cdef int version
    cdef bint flexible
    cdef BodyPath path
    cdef const char* what        # the primitive being read; NULL: a tagged field's data
    cdef int64_t tag             # (that tagged field's number)
    cdef Where where
    cdef object view             # the payload as a memoryview of bytes: records are slices
    cdef const uint8_t* data
    cdef bint indexing
    cdef dict indexes
    cdef str path_text(self)
    cdef int fail(self, Py_ssize_t pos, str what) except -1     # KafkaProtocolError at pos
    cdef int reader_fault(self, Py_ssize_t pos, int fault, int64_t a, int64_t b) except -1
    # reads: each names what it reads (for a reader fault) before reading it
    cdef int i16(self, Reader* r, int16_t* out) except -1
    cdef int i32(self, Reader* r, int32_t* out) except -1
    cdef int i64(self, Reader* r, int64_t* out) except -1
    cdef int uvarint(self, Reader* r, uint64_t* out) except -1
    cdef int length(self, Reader* r, bint string, int64_t* n) except -1
    cdef object string(self, Reader* r, bint nullable)
    cdef object uuid(self, Reader* r)
    cdef int array(self, Reader* r, bint nullable, int64_t* n) except -1
    # structs: path levels 0 body, 1 [topic], 2 its fields, 3 [partition], 4 its fields, ...
    cdef int tags(self, Reader* r, int level, int owner, dict out) except -1
    cdef dict tagged_struct(self, Reader* r, int level, int tag)
    cdef list endpoints(self, Reader* r, int level)
    cdef object aborted(self, Reader* r)
    cdef dict partition(self, Reader* r)
    cdef dict topic(self, Reader* r)
    cdef int body(self, Reader* r, dict out) except -1
