/* Small C helpers for the record-set decoder: big-endian loads, CRC32 (IEEE, for
 * magic v0/v1 messages; zlib headers are not assumed present, so it is table-driven
 * here, slicing-by-8, tables built on first use), xxHash32 of short inputs (to
 * recompute the LZ4 frame header checksum that Kafka's magic-v0 writer got wrong),
 * a UTF-8 validator for header keys written into Arrow string columns, and the cold
 * failure path of the bounds-checked readers (reader.pxd). */
#ifndef PYEXT_WIRE_H
#define PYEXT_WIRE_H

#include <Python.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

static inline uint16_t pyx_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t pyx_be32(const uint8_t *p) {
    uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v);
}
static inline uint64_t pyx_be64(const uint8_t *p) {
    uint64_t v; memcpy(&v, p, 8); return __builtin_bswap64(v);
}
static inline uint32_t pyx_le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* memcpy for short keys/values without a libc call: overlapping head/tail moves that stay
 * inside both ranges; longer copies go to memcpy. */
static inline void pyx_copy(uint8_t *dst, const uint8_t *src, size_t n) {
    if (n <= 16) {
        if (n >= 8) {
            uint64_t a, b; memcpy(&a, src, 8); memcpy(&b, src + n - 8, 8);
            memcpy(dst, &a, 8); memcpy(dst + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b; memcpy(&a, src, 4); memcpy(&b, src + n - 4, 4);
            memcpy(dst, &a, 4); memcpy(dst + n - 4, &b, 4);
        } else if (n > 0) {
            dst[0] = src[0]; dst[n / 2] = src[n / 2]; dst[n - 1] = src[n - 1];
        }
        return;
    }
    memcpy(dst, src, n);
}

/* ---------------------------------------------------------------- CRC32 (IEEE 802.3) */
/* Slicing-by-8 tables of a reflected CRC-32 polynomial, and the loop that uses them (shared by
 * CRC32 and CRC32C's table path). */
static void pyx_crc_tables(uint32_t tab[8][256], uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = tab[0][i];
        for (int t = 1; t < 8; t++) {
            c = tab[0][c & 0xff] ^ (c >> 8);
            tab[t][i] = c;
        }
    }
}

static uint32_t pyx_crc_slice8(uint32_t tab[8][256], uint32_t c, const uint8_t *p, size_t len) {
    while (len >= 8) {
        uint32_t lo = pyx_le32(p) ^ c, hi = pyx_le32(p + 4);
        c = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^ tab[5][(lo >> 16) & 0xff] ^
            tab[4][lo >> 24] ^ tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
            tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
        p += 8; len -= 8;
    }
    while (len--) c = tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

static uint32_t pyx_crc32_tab[8][256];
static int pyx_crc32_ready = 0;

/* CRC32 of buf[0..len) as zlib.crc32(data) computes it (little-endian host assumed). */
static inline uint32_t pyx_crc32(const uint8_t *p, size_t len) {
    if (!pyx_crc32_ready) {
        pyx_crc_tables(pyx_crc32_tab, 0xEDB88320u);
        pyx_crc32_ready = 1;
    }
    return pyx_crc_slice8(pyx_crc32_tab, 0xFFFFFFFFu, p, len) ^ 0xFFFFFFFFu;
}

/* ---------------------------------------------------------------- CRC32C (Castagnoli) */
/* The v2 batch checksum, for checking batches ahead of the walker on another thread (the
 * walker itself calls the crc32c package, which needs the GIL between batches). SSE 4.2's
 * crc32 instruction where the CPU has it (checked once, at module init), else slicing-by-8
 * tables. */
static uint32_t pyx_crc32c_tab[8][256];
static int pyx_crc32c_hw = 0;

/* The instruction's latency is 3 cycles and it can start one each cycle: one running CRC
 * waits on itself, three over three blocks side by side go ~3x faster. A block's CRC is
 * joined to the one before by moving that one past the block's length in zero bytes, a
 * linear map of the 32-bit register, kept as four byte tables per block length. Long blocks
 * (8 KB: each stream stays sequential long enough for the prefetcher, on data out of cache)
 * first, then short ones for the rest of a batch (Kafka's default batch is 16 KB). */
#define PYX_CRC_LONG 8192                    /* bytes per stream per round (multiples of 8) */
#define PYX_CRC_SHORT 256
static uint32_t pyx_crc32c_skip_long[4][256];
static uint32_t pyx_crc32c_skip_short[4][256];

static uint32_t pyx_crc32c_skip(uint32_t skip[4][256], uint32_t c) {
    return skip[0][c & 0xFF] ^ skip[1][(c >> 8) & 0xFF] ^ skip[2][(c >> 16) & 0xFF]
         ^ skip[3][c >> 24];
}

static void pyx_crc32c_skip_tables(uint32_t skip[4][256], size_t block) {
    static const uint8_t zeros[PYX_CRC_LONG];
    uint32_t bit[32];
    /* the register moved past a block of zeros, for each of its bits alone; a byte's
     * table entry is the sum (xor) of its bits' */
    for (int i = 0; i < 32; i++)
        bit[i] = pyx_crc_slice8(pyx_crc32c_tab, 1u << i, zeros, block);
    for (int k = 0; k < 4; k++)
        for (int v = 0; v < 256; v++) {
            uint32_t t = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1 << b)) t ^= bit[8 * k + b];
            skip[k][v] = t;
        }
}

static void pyx_crc32c_init(void) {
    pyx_crc_tables(pyx_crc32c_tab, 0x82F63B78u);
    pyx_crc32c_skip_tables(pyx_crc32c_skip_long, PYX_CRC_LONG);
    pyx_crc32c_skip_tables(pyx_crc32c_skip_short, PYX_CRC_SHORT);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    pyx_crc32c_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

/* tests: 0 makes pyx_crc32c use the tables, 1 the instruction again (if the CPU has it) */
static void pyx_crc32c_use_hw(int on) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    pyx_crc32c_hw = on && __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
    (void)on;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t pyx_crc32c_sse42(uint32_t c, const uint8_t *p, size_t len) {
    /* three streams over blocks of `block` bytes, joined after each round */
#define PYX_CRC_ROUNDS(block, skip)                                                    \
    while (len >= 3 * (block)) {                                                       \
        uint64_t a = c, b = 0, d = 0, va, vb, vd;                                      \
        for (size_t i = 0; i < (block); i += 8) {                                      \
            memcpy(&va, p + i, 8);                                                     \
            memcpy(&vb, p + (block) + i, 8);                                           \
            memcpy(&vd, p + 2 * (block) + i, 8);                                       \
            a = __builtin_ia32_crc32di(a, va);                                         \
            b = __builtin_ia32_crc32di(b, vb);                                         \
            d = __builtin_ia32_crc32di(d, vd);                                         \
        }                                                                              \
        c = pyx_crc32c_skip(skip, pyx_crc32c_skip(skip, (uint32_t)a) ^ (uint32_t)b)    \
            ^ (uint32_t)d;                                                             \
        p += 3 * (block);                                                              \
        len -= 3 * (block);                                                            \
    }
    PYX_CRC_ROUNDS(PYX_CRC_LONG, pyx_crc32c_skip_long)
    PYX_CRC_ROUNDS(PYX_CRC_SHORT, pyx_crc32c_skip_short)
#undef PYX_CRC_ROUNDS
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t v; memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8; len -= 8;
    }
    c = (uint32_t)c64;
    while (len--) c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

/* CRC32C of p[0..len), as crc32c.crc32c computes it; pyx_crc32c_init must have run. */
static inline uint32_t pyx_crc32c(const uint8_t *p, size_t len) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (pyx_crc32c_hw) return pyx_crc32c_sse42(0xFFFFFFFFu, p, len) ^ 0xFFFFFFFFu;
#endif
    return pyx_crc_slice8(pyx_crc32c_tab, 0xFFFFFFFFu, p, len) ^ 0xFFFFFFFFu;
}

/* a byte another thread reads or writes at the same time (a batch's check-ahead state) */
static inline uint8_t pyx_load_u8(const uint8_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void pyx_store_u8(uint8_t *p, uint8_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* ---------------------------------------------------------------- xxHash32, inputs < 16 bytes */
#define PYX_XXP1 2654435761u
#define PYX_XXP2 2246822519u
#define PYX_XXP3 3266489917u
#define PYX_XXP4 668265263u
#define PYX_XXP5 374761393u
static inline uint32_t pyx_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t pyx_xxh32_short(const uint8_t *p, size_t len) {
    uint32_t h = PYX_XXP5 + (uint32_t)len;   /* seed 0 */
    while (len >= 4) { h += pyx_le32(p) * PYX_XXP3; h = pyx_rotl32(h, 17) * PYX_XXP4; p += 4; len -= 4; }
    while (len--) { h += (*p++) * PYX_XXP5; h = pyx_rotl32(h, 11) * PYX_XXP1; }
    h ^= h >> 15; h *= PYX_XXP2; h ^= h >> 13; h *= PYX_XXP3; h ^= h >> 16;
    return h;
}

/* ---------------------------------------------------------------- UTF-8 validation */
static inline int pyx_utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t need; uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else return 0;
        for (size_t k = 1; k <= need; k++) {
            if (i + k >= n || (s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
        i += need + 1;
    }
    return 1;
}

/* ---------------------------------------------------------------- reader faults
 * The failure path of the inline readers, out of line and cold so that they stay small
 * enough to be inlined into the record loops. Readers run in nogil loops, so the GIL is
 * taken here; the hook (set once by the module at import: errors.pyx) turns the fault into
 * the module's one CorruptRecordError and returns -1 with it set. */
typedef int (*pyx_fault_hook)(PyObject *topic, int32_t partition, int64_t offset,
                              Py_ssize_t origin, int inflated, Py_ssize_t pos, int fault,
                              int64_t a, int64_t b);
static pyx_fault_hook pyx_fault_hook_fn = NULL;

static void pyx_set_fault_hook(pyx_fault_hook f) { pyx_fault_hook_fn = f; }

/* The reader's fields come by value: a reader whose address never escapes stays in
 * registers in the record loops. */
static __attribute__((noinline, cold)) int pyx_fault(
        PyObject *topic, int32_t partition, int64_t offset, Py_ssize_t origin, int inflated,
        Py_ssize_t pos, int fault, int64_t a, int64_t b) {
    PyGILState_STATE st = PyGILState_Ensure();
    if (pyx_fault_hook_fn == NULL)
        PyErr_SetString(PyExc_RuntimeError, "record reader fault hook not set");
    else if (pyx_fault_hook_fn(topic, partition, offset, origin, inflated, pos, fault, a, b) != -1
             || !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "record reader fault hook did not raise");
    PyGILState_Release(st);
    return -1;
}

#endif
