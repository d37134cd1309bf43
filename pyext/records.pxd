# Contract of pyext.records: record sets (magic v0/v1/v2) -> ConsumerRecord objects or
# Arrow columns, and a per-partition cursor that drains them under max.poll.records.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t
from pyext.reader cimport Reader


ctypedef struct RecView:
    # One decoded record; pointers point into the fetch buffer or the decompressed batch.
    int64_t offset              # absolute offset
    int64_t timestamp           # ms (batch max timestamp under LogAppendTime)
    const uint8_t* key          # NULL when the key is null
    int32_t key_len             # -1 when null
    const uint8_t* value        # NULL when the value is null
    int32_t value_len           # -1 when null
    const uint8_t* headers      # start of the (already validated) headers section
    Py_ssize_t headers_len      # its length in bytes
    int32_t header_count        # number of headers (0 for magic v0/v1)


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


cdef class _PBuf:
    # An Arrow output buffer written through a raw pointer: 64-byte aligned malloc memory,
    # exported through the buffer protocol (pyarrow.py_buffer keeps it alive). Large blocks go
    # back to a small process-wide cache when freed, so the next batch reuses resident pages
    # instead of faulting in fresh ones (see _cache_take/_cache_give in records.pyx).
    cdef uint8_t* ptr            # the data
    cdef Py_ssize_t cap          # usable bytes
    cdef Py_ssize_t size         # bytes exported by finish()
    cdef bint zero               # zero new bytes on growth (validity bitmaps)
    cdef int _resize(self, Py_ssize_t new, Py_ssize_t keep) except -1
    cdef int ensure(self, Py_ssize_t nbytes) except -1   # grow (x1.5) to at least nbytes
    cdef int ensure_to(self, Py_ssize_t nbytes) except -1  # grow to exactly nbytes if larger
    cdef object finish(self, Py_ssize_t nbytes)          # fix the size, return a pa.Buffer
    cdef void _resize_down(self, Py_ssize_t nbytes)      # move a small result off a big block
    cdef int regrow(self, Py_ssize_t nbytes, Py_ssize_t used) except -1  # refit, copy used


cdef class _CBuf:
    # malloc'd bytes growable without the GIL, exported through the buffer protocol.
    cdef uint8_t* ptr            # data (NULL until the first growth)
    cdef Py_ssize_t cap          # allocated bytes
    cdef Py_ssize_t size         # bytes exported to Python at finish
    cdef bint zero               # zero new bytes on growth (validity bitmaps)
    cdef int ensure(self, Py_ssize_t nbytes) except -1 nogil   # grow (x2) to at least nbytes


cdef class _ArrowBuilder:
    # Column buffers of one output RecordBatch (Spark's Kafka source schema).
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
    cdef int add(self, RecView* v, int32_t ts_type) except -1 nogil  # 1 added, 0 full, 2 grow
    cdef int add_headers(self, RecView* v) except -1 nogil           # headers of the row
    cdef object finish(self, str topic, int32_t partition)           # -> pyarrow.RecordBatch


cdef class _Walker:
    # Walks one partition's record set batch by batch; state survives between takes.
    cdef object owner                # the record_set object
    cdef Py_buffer view              # its buffer (released in __dealloc__)
    cdef bint has_view               # view must be released
    cdef const uint8_t* data         # view.buf
    cdef Py_ssize_t length           # view.len
    cdef Py_ssize_t pos              # start of the next batch
    cdef str topic                   # for records and errors
    cdef int32_t partition           # for records and errors
    cdef object partition_obj        # partition as a Python int (shared by the records)
    cdef object ts_obj               # timestamp of the last record made, as a Python int
    cdef int64_t ts_val              # its value (records sharing a timestamp share the int)
    cdef bint check_crcs             # verify CRC32C (v2) / CRC32 (v0/v1)
    cdef bint read_committed         # isolation.level=read_committed
    cdef list aborted                # [(first_offset, producer_id)] sorted by first offset
    cdef Py_ssize_t aborted_idx      # next entry of aborted not yet activated
    cdef set aborted_pids            # producer ids whose current transaction is aborted
    cdef int64_t next_fetch_offset   # Java's nextFetchOffset
    cdef int64_t last_epoch          # leader epoch of the last record handed out (-1 none)
    cdef bint have_batch             # some batch was read (Java's currentBatch != null)
    cdef int64_t batch_next_offset   # last offset + 1 of the latest batch read
    cdef bint finished               # no more records in this record set
    cdef object error                # CorruptRecordError met after records were handed out:
                                     # raised by every later take (Java's cachedRecordException)
    cdef int64_t cut_offset          # base offset of the incomplete trailing batch (-1 unknown)
    cdef Py_ssize_t cut_size         # its declared size in bytes (-1 unknown)
    cdef Py_ssize_t cut_have         # its bytes present (0: the walker met none)
    cdef int magic                   # current batch magic
    cdef int64_t base_offset         # current batch base offset (v0/v1: wrapper offset)
    cdef int64_t base_ts             # current batch base timestamp
    cdef int64_t max_ts              # current batch max timestamp
    cdef int32_t ts_type             # current batch timestamp type
    cdef int32_t epoch               # current batch partition leader epoch (-1 none)
    cdef int32_t remaining           # records of the current batch not read yet
    cdef Reader rr                   # reader over the current batch's records
    cdef object region_owner         # keeps the decompressed records alive
    cdef bytearray dbuf              # reused decompression output
    cdef double ratio                # largest decompressed/compressed ratio seen (size guess)
    cdef bint legacy_inner           # current v0/v1 batch is a decompressed wrapper
    cdef bint legacy_relative        # inner offsets are relative (magic 1 wrapper)
    cdef int64_t legacy_adjust       # absolute = legacy_adjust + inner relative offset
    cdef bint legacy_log_append      # inner records take the wrapper's timestamp
    cdef int64_t wrapper_ts          # wrapper timestamp (magic 1)
    cdef Py_ssize_t undo_pos         # rr.pos before the last record read
    cdef int32_t undo_remaining      # remaining before the last record read
    cdef int64_t undo_nfo            # next_fetch_offset before the last record read
    cdef int64_t undo_epoch          # last_epoch before the last record read
    cdef int fail(self, str msg, int64_t offset) except -1       # raise CorruptRecordError
    cdef int load_batch(self) except -1          # 1 when a batch with records is loaded, 0 at end
    cdef int advance(self) except -1             # load_batch, or finish at the end (0)
    cdef int maybe_finish(self) except -1        # finish when no complete batch remains
    cdef void _incomplete(self, int64_t offset, Py_ssize_t size, Py_ssize_t have) noexcept
    cdef int set_region(self, const uint8_t* p, Py_ssize_t n, int64_t off) noexcept nogil
    cdef int decompress(self, int codec, const uint8_t* src, Py_ssize_t n,
                        int64_t off) except -1   # into dbuf, sets the region
    cdef int is_abort_marker(self) except -1     # first control record of the region is ABORT
    cdef int _load_region(self, const uint8_t* b, Py_ssize_t size, int32_t count, int codec,
                          int64_t base) except -1  # v2 records region (decompressed if needed)
    cdef int _load_legacy(self, const uint8_t* b, Py_ssize_t size, int magic,
                          int64_t base) except -1  # a v0/v1 message or wrapper as a batch
    cdef Py_ssize_t _snappy(self, const uint8_t* src, Py_ssize_t n, object src_mv,
                            int64_t off) except -1  # raw or xerial snappy into dbuf
    cdef int read_v2(self, RecView* v) except -1 nogil       # next v2 record
    cdef int read_legacy(self, RecView* v) except -1 nogil   # next v0/v1 message
    cdef int read_record(self, RecView* v) except -1 nogil   # 1 handed out, 0 skipped
    cdef void undo(self) noexcept nogil          # forget the last read_record
    cdef int fill_arrow(self, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil  # 1/0 full/2 grow
    cdef int fill_arrow_v2(self, _ArrowBuilder b, Py_ssize_t max_rows) except -1 nogil  # fast v2 path
    cdef list take_records(self, Py_ssize_t max_records, object key_des, object value_des)
    cdef int _take_records(self, list out, Py_ssize_t max_records, object key_des,
                           object value_des, bint des) except -1  # the loop of take_records
    cdef object take_arrow(self, Py_ssize_t max_rows, bint include_headers)
    cdef int _take_arrow(self, _ArrowBuilder b, Py_ssize_t max_rows,
                         bint include_headers) except -1          # the loop of take_arrow


cdef class CompletedFetch:
    cdef _Walker w                   # the cursor
    cdef bint include_headers        # take_arrow builds the headers column
    cdef object key_deserializer     # callable(bytes | None) or None
    cdef object value_deserializer   # callable(bytes | None) or None
    cdef bint discarded              # discard() was called
