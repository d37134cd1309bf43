# Magic v0/v1 message sets (Kafka's LegacyRecord). Offsets from the message start:
#
#   offset int64 | messageSize int32 | crc uint32 (CRC32 of magic..end) | magic int8
#   | attributes int8 | [timestamp int64, v1 only] | keyLength int32 | key
#   | valueLength int32 | value
#   attributes: bits 0-2 codec (gzip, snappy, lz4 only), bit 3 LogAppendTime (v1)
#
# A compressed message (a wrapper) carries an inner message set as its value. Inner offsets
# are relative in v1 (the wrapper's offset is the last inner message's), absolute in v0.
# A top-level message is handed to the walker as a batch: an uncompressed one holds itself,
# a wrapper its inner messages.

cdef enum:
    V0_MIN_SIZE = 14             # crc + magic + attributes + key length + value length
    V1_MIN_SIZE = 22             # V0_MIN_SIZE + timestamp


ctypedef struct Legacy:
    bint inner                   # the region is a wrapper's decompressed inner message set
    bint relative                # inner offsets are relative: absolute = adjust + inner offset
    int64_t adjust               # see relative
    bint log_append              # records take the wrapper's timestamp (v1 LogAppendTime)
    int64_t wrapper_ts           # the wrapper's (or the message's own) timestamp, -1 for v0


cdef int legacy_load(_Walker w, Reader* m, int magic) except -1
    # the top-level message m spans as the walker's current batch: 1 when it has records
    # to hand out, 0 when not (below the fetch offset, or an empty wrapper)
cdef int legacy_read(Reader* r, const Legacy* s, int64_t base_offset, bint check_crcs,
                     RecView* v) except -1 nogil   # the message at r's position into v
