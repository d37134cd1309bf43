# Records as Arrow columns, in Spark's Kafka source schema (kafka_arrow_schema): the builder
# of one RecordBatch, written through raw pointers without a Python object per record, and
# the loops that fill it from a walker (arrow_fill_v2: the fast path of magic-2 batches
# without the headers column). Arrow binary columns have int32 offsets: one RecordBatch
# holds at most 2 GiB of keys (and of values); a full builder ends its batch early.

cdef class _ArrowBuilder:
    # Column buffers of one output RecordBatch.
    cdef Py_ssize_t n            # rows written
    cdef bint include_headers    # build the headers column
    cdef bint full               # a binary column would pass 2 GiB: stop this batch here
    cdef Py_ssize_t rows_target  # rows this batch is expected to reach (from batch headers)
    cdef Py_ssize_t need_key     # key bytes of a row refused for lack of room
    cdef Py_ssize_t need_val     # value bytes of a row refused for lack of room
    cdef Py_ssize_t plain_bytes  # key+value bytes bound of the uncompressed batches estimated
    cdef Py_ssize_t comp_bytes   # compressed payload bytes of the compressed batches estimated
    cdef bint reprojected        # data buffers were re-sized after the first compressed batch
    cdef _PBuf offsets           # int64 offsets
    cdef _PBuf timestamps        # int64 microseconds
    cdef _PBuf ts_types          # int32 timestamp types
    cdef _PBuf key_valid         # key validity bitmap
    cdef _PBuf key_offs          # int32 key offsets (n + 1)
    cdef _PBuf key_data          # key bytes
    cdef Py_ssize_t key_used     # key bytes written
    cdef Py_ssize_t key_nulls    # null keys
    cdef _PBuf val_valid         # value validity bitmap
    cdef _PBuf val_offs          # int32 value offsets (n + 1)
    cdef _PBuf val_data          # value bytes
    cdef Py_ssize_t val_used     # value bytes written
    cdef Py_ssize_t val_nulls    # null values
    cdef int64_t* p_off          # offsets.ptr (raw pointers cached for the row loop)
    cdef int64_t* p_ts           # timestamps.ptr
    cdef int32_t* p_tt           # ts_types.ptr
    cdef uint8_t* p_kv           # key_valid.ptr
    cdef int32_t* p_ko           # key_offs.ptr
    cdef uint8_t* p_kd           # key_data.ptr
    cdef Py_ssize_t kd_cap       # key_data.cap
    cdef uint8_t* p_vv           # val_valid.ptr
    cdef int32_t* p_vo           # val_offs.ptr
    cdef uint8_t* p_vd           # val_data.ptr
    cdef Py_ssize_t vd_cap       # val_data.cap
    cdef _CBuf h_valid           # headers list validity bitmap
    cdef _CBuf h_offs            # headers list offsets (n + 1)
    cdef Py_ssize_t h_nulls      # records without headers
    cdef Py_ssize_t h_count      # header entries written
    cdef _CBuf hk_offs           # header key (string) offsets
    cdef _CBuf hk_data           # header key bytes (valid UTF-8)
    cdef Py_ssize_t hk_used      # header key bytes written
    cdef _CBuf hv_valid          # header value validity bitmap
    cdef _CBuf hv_offs           # header value offsets
    cdef _CBuf hv_data           # header value bytes
    cdef Py_ssize_t hv_used      # header value bytes written
    cdef Py_ssize_t hv_nulls     # null header values
    cdef void sync(self) noexcept   # refresh the cached pointers after buffers grew
    cdef int reserve(self, Py_ssize_t rows) except -1   # room for rows more rows (+ a refused row)
    cdef int reproject(self, double ratio) except -1    # size data buffers from the rows so far
    cdef int add(self, const RecView* v, int32_t ts_type,
                 const Reader* region) except -1 nogil   # 1 added, 0 full, 2 grow first
    cdef int add_headers(self, const RecView* v,
                         const Reader* region) except -1 nogil   # the row's headers column
    cdef object finish(self, str topic, int32_t partition)           # -> pyarrow.RecordBatch
    cdef object finish_segments(self, list segments)   # rows of several (topic, partition, rows)


cdef struct _Estimate:
    # what a take may need, from the batch headers ahead (arrow_estimate)
    Py_ssize_t rows          # rows expected
    Py_ssize_t bytes         # key+value bytes (uncompressed: a bound; compressed: a guess)
    Py_ssize_t plain         # bound of the uncompressed batches' key+value bytes
    Py_ssize_t comp          # compressed payload bytes
    Py_ssize_t first_rows    # rows up to the end of the first batch
    Py_ssize_t first_bytes   # bytes up to the end of the first batch

cdef int arrow_estimate(_Walker w, Py_ssize_t max_rows, _Estimate* out) except -1
    # rows and bytes of a take of up to max_rows rows from the batches ahead of w
cdef _ArrowBuilder _builder_from(_Estimate* e, bint include_headers)
cdef _ArrowBuilder arrow_builder_for(_Walker w, Py_ssize_t max_rows, bint include_headers)
    # a builder sized for up to max_rows rows from the batches ahead of w
cdef _ArrowBuilder arrow_builder_many(list walkers, list budgets, bint include_headers)
    # a builder for takes of budgets[i] rows from each walkers[i] in turn
cdef int arrow_fill(_Walker w, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil
    # rows of w's current batch (any magic, headers too): 1 done, 0 full, 2 grow first
cdef int arrow_fill_v2(_Walker w, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil
    # the same for a magic-2 batch without the headers column
