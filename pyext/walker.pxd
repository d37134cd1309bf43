# The per-partition cursor: walks one record set batch by batch (magic v0, v1, v2 mixed),
# skips control batches and aborted transactions (read_committed), records below the fetch
# offset, stops at an incomplete trailing batch, and hands records out as ConsumerRecords or
# Arrow rows, at most N per take. State survives between takes (Java's CompletedFetch).
# The walker owns that state: the position and the row bookkeeping (next_fetch_offset,
# last_epoch) are written here only (the fill loops hand their cursor back through took(),
# a parallel take's parts come back through absorb()).

cdef class _Walker:
    cdef object owner                # the record_set object
    cdef Py_buffer view              # its buffer (released in __dealloc__)
    cdef bint has_view               # view must be released
    cdef Where set_where             # the record set's bytes (for errors)
    cdef Where inflated_where        # the current batch's decompressed records (for errors)
    cdef Reader rs                   # over the whole record set; pos: the next batch
    cdef Py_ssize_t batch_pos        # record-set byte of the current batch (for errors)
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
    cdef bint open_end               # a part of a larger record set (CompletedFetch.split):
                                     # its end is no compaction gap to move the position past
    cdef object error                # CorruptRecordError met after records were handed out:
                                     # raised by every later take (Java's cachedRecordException)
    cdef int64_t cut_offset          # base offset of the incomplete trailing batch (-1 unknown)
    cdef Py_ssize_t cut_size         # its declared size in bytes (-1 unknown)
    cdef Py_ssize_t cut_have         # its bytes present (0: the walker met none)
    cdef int magic                   # current batch magic
    cdef int64_t base_offset         # current batch base offset (v0/v1: the message's)
    cdef V2Batch v2                  # current v2 batch, as the record parser needs it
    cdef Legacy legacy               # current v0/v1 message, as legacy_read needs it
    cdef int32_t ts_type             # current batch timestamp type
    cdef int32_t epoch               # current batch partition leader epoch (-1 none)
    cdef int32_t remaining           # records of the current batch not read yet
    cdef Reader rr                   # over the current batch's records (or message)
    cdef object region_owner         # keeps decompressed records alive while rr reads them
    cdef _Inflater inflater          # decompression, its output buffer reused
    cdef Py_ssize_t undo_pos         # rr.pos before the last record read
    cdef int32_t undo_remaining      # remaining before the last record read
    cdef int64_t undo_nfo            # next_fetch_offset before the last record read
    cdef int64_t undo_epoch          # last_epoch before the last record read
    cdef RecordSetIndex index        # of the record set this walker's bytes are part of
                                     # (None until needed; a part shares its whole's)
    cdef Py_ssize_t origin           # byte of the index's record set at rs.buf[0]
    cdef int load_batch(self) except -1          # 1 when a batch with records is loaded, 0 at end
    cdef int _load_v2(self, Reader* b) except -1  # the v2 batch b spans (0: nothing to hand out)
    cdef int _load_region(self, Reader* records, int32_t count, int codec) except -1
        # point rr at the current v2 batch's records (decompressed if need be)
    cdef int is_abort_marker(self) except -1     # first control record of the region is ABORT
    cdef int advance(self) except -1             # load_batch, or finish at the end (0)
    cdef int maybe_finish(self) except -1        # finish when no complete batch remains
    cdef void _incomplete(self, int64_t offset, Py_ssize_t size, Py_ssize_t have) noexcept
    cdef int read_record(self, RecView* v) except -1 nogil   # 1 handed out, 0 skipped
    cdef void undo(self) noexcept nogil          # forget the last read_record
    cdef void took(self, Py_ssize_t pos, int32_t remaining, int64_t next_offset,
                   bint rows) noexcept nogil
        # a fill loop that parsed records itself (arrow_fill_v2) hands its cursor back
    cdef list take_records(self, Py_ssize_t max_records, object key_des, object value_des)
    cdef int _take_records(self, list out, Py_ssize_t max_records, object key_des,
                           object value_des, bint des) except -1  # the loop of take_records
    cdef object take_arrow(self, Py_ssize_t max_rows, bint include_headers)
    cdef int take_arrow_into(self, _ArrowBuilder b, Py_ssize_t max_rows,
                             bint include_headers) except -1
        # take_arrow into a builder shared with other walkers: 1 clean, 0 stopped at an error
    cdef int _take_arrow(self, _ArrowBuilder b, Py_ssize_t max_rows,
                         bint include_headers) except -1          # the loop of take_arrow
    cdef void release(self) noexcept             # drop the decompression state (finished)
    cdef void drop(self) noexcept                # hand out nothing more (CompletedFetch.discard)
    cdef RecordSetIndex get_index(self)          # the index, built on first use
    cdef int use_index(self, RecordSetIndex index) except -1   # one built already (same bytes)
    cdef list split(self, Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes)
        # walkers over the next whole v2 batches, cut at the index's cut points (None: no cut)
    cdef int absorb(self, _Walker part, bint rows) except -1
        # move past a part that was taken to its end, as if its batches were taken here
