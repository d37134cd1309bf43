# --------------------------------------------------------------------------- codecs

import cramjam

# A hostile or corrupt batch must not make us allocate without bound; Kafka's own
# max.message.bytes is 1 MiB by default.
cdef Py_ssize_t _max_decompressed = 256 * 1024 * 1024

_CODEC_NAMES = {CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy", CODEC_LZ4: "lz4",
                CODEC_ZSTD: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def set_max_decompressed_size(Py_ssize_t nbytes) -> None:
    """Refuse compressed batches whose decompressed size exceeds ``nbytes`` (default 256 MiB)."""
    global _max_decompressed
    if nbytes < 1024:
        raise ValueError(f"max decompressed size must be >= 1024 bytes, got {nbytes}")
    _max_decompressed = nbytes


def get_max_decompressed_size() -> int:
    return _max_decompressed


cdef Py_ssize_t _snappy_length(Reader* block, Py_ssize_t n) except -1:
    """The uncompressed length that prefixes a raw snappy block of n bytes (a varint)."""
    cdef Reader r = block[0]
    cdef uint64_t length
    rd_uvarint(&r, &length, 5)
    if length > <uint64_t>(64 * n + 64):        # snappy expands at most ~22:1
        corrupt_at(block, f"Snappy block claims {length} bytes from {n} compressed")
    return <Py_ssize_t>length


@cython.final
cdef class _Inflater:
    def __cinit__(self):
        self.buf = None
        self.ratio = 4.0

    cdef Py_ssize_t inflate(self, int codec, Reader* src, bint kafka3160) except -1:
        """Decompress the rest of src into buf and return the decompressed length.
        kafka3160: an lz4 frame from Kafka's magic-0 writer, whose header checksum also
        covered the frame magic (KAFKA-3160); it is recomputed so the decoder accepts it."""
        cdef Py_ssize_t n = rd_left(src), guess = 0, cap, got
        cdef Py_ssize_t limit = _max_decompressed
        cdef Reader peek = src[0]
        cdef const uint8_t* p = rd_bytes(&peek, n)
        cdef uint32_t word
        cdef bytearray fixed
        src_mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
        name = _CODEC_NAMES.get(codec, str(codec))
        try:
            if codec == CODEC_SNAPPY:
                got = self._snappy(src, src_mv)
            else:
                if codec == CODEC_GZIP:
                    mod = cramjam.gzip
                    if n >= 18:     # gzip trailer ISIZE: uncompressed size mod 2^32
                        peek = src[0]
                        rd_skip(&peek, n - 4)
                        rd_u32le(&peek, &word)
                        guess = word
                        if guess > n * 1032:   # deflate cannot expand more than 1032:1
                            guess = 0
                    guess += 64
                elif codec == CODEC_LZ4:
                    mod = cramjam.lz4
                    peek = src[0]
                    if kafka3160 and n >= 7:
                        rd_u32(&peek, &word)
                        if word == 0x04224D18:
                            fixed = bytearray(src_mv)
                            hlen = 2 + (8 if fixed[4] & 0x08 else 0) + (4 if fixed[4] & 0x01 else 0)
                            if 4 + hlen < n:
                                fixed[4 + hlen] = (pyx_xxh32_short(p + 4, hlen) >> 8) & 0xFF
                            src_mv = memoryview(fixed)
                else:
                    mod = cramjam.zstd
                if guess <= 0 or guess > limit:
                    guess = <Py_ssize_t>(n * self.ratio) + 1024
                while True:
                    cap = min(guess, limit)
                    if self.buf is None or len(self.buf) < cap:
                        self.buf = bytearray(cap)
                    try:
                        got = mod.decompress_into(src_mv, self.buf)
                        break
                    except cramjam.DecompressionError as e:
                        if "failed to write whole buffer" not in str(e):
                            raise
                        if len(self.buf) >= limit:
                            corrupt_at(src, f"Decompressed {name} batch exceeds the limit of "
                                            f"{limit} bytes (set_max_decompressed_size)")
                        guess = len(self.buf) * 2
        except CorruptRecordError:
            raise
        except Exception as e:
            corrupt_at(src, f"Cannot decompress {name} batch ({e})", -1, None, e)
        if n > 0 and got / <double>n > self.ratio:
            self.ratio = got / <double>n
        return got

    cdef Py_ssize_t _snappy(self, Reader* src, object src_mv) except -1:
        """Raw snappy, or Java's xerial framing: magic, two ints, then [int32 length][block]."""
        cdef Reader r = src[0]
        cdef Reader block
        cdef Py_ssize_t start = r.pos, n = rd_left(&r), total = 0, blen
        cdef int32_t bl
        cdef list blocks = []                  # (start in src, compressed, decompressed)
        if n >= 16 and src_mv[:8] == _XERIAL_MAGIC:
            rd_skip(&r, 16)
            while rd_left(&r) > 0:
                rd_i32(&r, &bl)
                rd_sub(&r, &block, bl)
                blen = _snappy_length(&block, bl)
                blocks.append((block.pos - start, bl, blen))
                total += blen
        else:
            blen = _snappy_length(&r, n)
            blocks.append((0, n, blen))
            total = blen
        if total > _max_decompressed:
            corrupt_at(src, f"Decompressed snappy batch exceeds the limit of "
                            f"{_max_decompressed} bytes (set_max_decompressed_size)")
        if self.buf is None or len(self.buf) < total:
            self.buf = bytearray(total)
        out = memoryview(self.buf)
        at = 0
        for (s, l, blen) in blocks:
            if cramjam.snappy.decompress_raw_into(src_mv[s:s + l], out[at:at + blen]) != blen:
                corrupt_at(src, "Snappy block shorter than its declared length", start + s)
            at += blen
        out.release()
        return total
