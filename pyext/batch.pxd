# Batch framing: the log header every batch starts with, and the v2 batch header with its
# CRC32C (Kafka's DefaultRecordBatch). Offsets from the batch start:
#
#   baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8
#   | crc uint32 (CRC32C of attributes..end) | attributes int16 | lastOffsetDelta int32
#   | baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16
#   | baseSequence int32 | recordsCount int32 | records
#   attributes: bits 0-2 codec (codecs.pxd), bit 3 LogAppendTime, bit 4 transactional,
#               bit 5 control
#
# The first 17 bytes (offset, length, a 4-byte field, magic) are shared with v0/v1 messages
# (legacy.pxd), which is how a record set mixing magics is walked.

cdef enum:
    LOG_OVERHEAD = 12            # baseOffset + batchLength
    HEADER_UP_TO_MAGIC = 17      # LOG_OVERHEAD + partitionLeaderEpoch + magic
    V2_CRC_AT = 17               # the stored CRC32C
    V2_ATTRS_AT = 21             # first byte the CRC32C covers
    V2_HEADER = 61               # v2 batch header size
    V2_MIN_LENGTH = 49           # V2_HEADER - LOG_OVERHEAD
    V2_MIN_RECORD = 7            # smallest v2 record: 7 one-byte fields
    ATTR_CODEC = 0x07
    ATTR_LOG_APPEND = 0x08
    ATTR_TXN = 0x10
    ATTR_CONTROL = 0x20


ctypedef struct BatchHeader:
    int64_t base_offset          # baseOffset
    int32_t length               # batchLength: bytes after this field
    int32_t leader_epoch         # partitionLeaderEpoch (-1: none)
    int8_t magic                 # 2
    uint32_t crc                 # stored CRC32C
    int16_t attributes
    int32_t last_offset_delta
    int64_t base_timestamp
    int64_t max_timestamp
    int64_t producer_id          # -1: not idempotent / transactional
    int16_t producer_epoch
    int32_t base_sequence
    int32_t count                # recordsCount


cdef int batch_peek(const Reader* rs, int64_t* base, int32_t* length) except -1
    # base offset and batch length at rs's position, not consumed: 2 both, 1 base only, 0 none
cdef int batch_magic(const Reader* b, int8_t* magic) except -1   # of the batch b starts at
cdef int batch_read_v2(Reader* b, BatchHeader* h, bint check_crc) except -1
    # the header of the v2 batch b spans, checked (length, CRC32C, count, codec); b is left
    # at its records


cdef inline int batch_check_end(Reader* records, int64_t base_offset) except -1 nogil:
    """After a batch's last record, no bytes of its records may be left (Java: 'Incorrect
    declared batch size')."""
    if records.pos != records.end:
        records.offset = base_offset
        return rd_fault(records[0], F_TRAILING, records.end - records.pos, 0)
    return 0
