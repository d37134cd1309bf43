# Decompression of compressed batches (a v2 batch's records, a v0/v1 wrapper's value)
# through cramjam into one reused bytearray. A batch may decompress to at most
# get_max_decompressed_size() bytes; more, or bytes a codec refuses, is corruption.

cdef enum Codec:
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_SNAPPY = 2      # raw, or Java's xerial framing
    CODEC_LZ4 = 3         # frame format
    CODEC_ZSTD = 4


cdef class _Inflater:
    cdef bytearray buf          # decompressed records, reused batch after batch
    cdef double ratio           # largest decompressed/compressed ratio seen: the next size guess
    cdef Py_ssize_t inflate(self, int codec, Reader* src, bint kafka3160) except -1  # -> bytes in buf
    cdef Py_ssize_t _snappy(self, Reader* src, object src_mv) except -1     # raw or xerial snappy
