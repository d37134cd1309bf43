# --------------------------------------------------------------------------- buffers

from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyBuffer_FillInfo

import pyarrow as pa

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

# Freed large output buffers, kept for reuse: writing a fresh 100 MB buffer costs more in
# page faults (the kernel zeroing 25,600 new pages) than decoding the records that fill it.
# Only blocks of at least _CACHE_MIN bytes are kept (smaller ones come from malloc's heap,
# whose pages stay resident; from 128 KiB up glibc maps fresh pages), up to _cache_limit
# bytes in all.
cdef Py_ssize_t _CACHE_MIN = 64 << 10
cdef Py_ssize_t _cache_limit = 256 << 20
cdef Py_ssize_t _cache_bytes = 0
cdef list _cache = []                     # [(capacity, address)], unordered, short
cdef Py_ssize_t _native_now = 0           # bytes held by live _PBuf blocks
cdef Py_ssize_t _native_peak = 0


def set_buffer_cache_limit(Py_ssize_t nbytes) -> None:
    """Keep at most ``nbytes`` of freed Arrow output buffers for reuse (0 disables)."""
    global _cache_limit, _cache_bytes
    if nbytes < 0:
        raise ValueError(f"the buffer cache limit must be >= 0, got {nbytes}")
    _cache_limit = nbytes
    while _cache_bytes > _cache_limit and _cache:
        cap, addr = _cache.pop()
        _cache_bytes -= cap
        free(<void*><uintptr_t>addr)


def get_buffer_cache_limit() -> int:
    return _cache_limit


def native_memory():
    """(bytes held by live Arrow output buffers, high-water mark since reset_native_peak)."""
    return _native_now, _native_peak


def reset_native_peak() -> None:
    global _native_peak
    _native_peak = _native_now


cdef inline void _account(Py_ssize_t delta) noexcept:
    global _native_now, _native_peak
    _native_now += delta
    if _native_now > _native_peak:
        _native_peak = _native_now


cdef void* _cache_take(Py_ssize_t want, Py_ssize_t* got):
    """A cached block of at least ``want`` bytes (at most 2x, not to waste), or NULL."""
    global _cache_bytes
    cdef Py_ssize_t i, best = -1, best_cap = 0, cap
    if want < _CACHE_MIN:
        return NULL
    for i in range(len(_cache)):
        cap = _cache[i][0]
        if want <= cap <= 2 * want and (best < 0 or cap < best_cap):
            best, best_cap = i, cap
    if best < 0:
        return NULL
    cap, addr = _cache.pop(best)
    _cache_bytes -= cap
    got[0] = cap
    return <void*><uintptr_t>addr


cdef void _cache_give(void* p, Py_ssize_t cap):
    global _cache_bytes
    cdef Py_ssize_t smallest
    if _cache is None:          # interpreter shutdown: module state already cleared
        free(p)
        return
    if cap >= _CACHE_MIN and cap <= _cache_limit:
        # make room by dropping the smallest blocks first
        while _cache_bytes + cap > _cache_limit and _cache:
            smallest = min(range(len(_cache)), key=lambda i: _cache[i][0])
            old_cap, old_addr = _cache.pop(smallest)
            _cache_bytes -= old_cap
            free(<void*><uintptr_t>old_addr)
        _cache.append((cap, <uintptr_t>p))
        _cache_bytes += cap
    else:
        free(p)


@cython.final
cdef class _PBuf:
    def __cinit__(self, Py_ssize_t initial, int fill=-1):
        self.ptr = NULL
        self.cap = 0
        self.size = 0
        self.fill = fill
        if initial < 64:
            initial = 64
        self._resize(initial, 0)

    def __dealloc__(self):
        if self.ptr != NULL:
            _account(-self.cap)
            _cache_give(self.ptr, self.cap)
            self.ptr = NULL

    cdef int _resize(self, Py_ssize_t new, Py_ssize_t keep) except -1:
        """Make the capacity at least ``new`` bytes, keeping the first ``keep``."""
        cdef void* q = NULL
        cdef Py_ssize_t got = new
        q = _cache_take(new, &got)
        if q == NULL:
            if posix_memalign(&q, 64, <size_t>new) != 0:
                raise MemoryError(f"cannot allocate an Arrow buffer of {new} bytes")
        if keep:
            memcpy(q, self.ptr, keep)
        if self.fill >= 0 and got > keep:
            memset(<uint8_t*>q + keep, self.fill, got - keep)
        if self.ptr != NULL:
            _account(-self.cap)
            _cache_give(self.ptr, self.cap)
        _account(got)
        self.ptr = <uint8_t*>q
        self.cap = got
        return 0

    cdef int ensure(self, Py_ssize_t nbytes) except -1:
        cdef Py_ssize_t new
        if nbytes <= self.cap:
            return 0
        new = self.cap + (self.cap >> 1)
        if new < nbytes:
            new = nbytes
        return self._resize(new, self.cap)

    cdef int ensure_to(self, Py_ssize_t nbytes) except -1:
        if nbytes <= self.cap:
            return 0
        return self._resize(nbytes, self.cap)

    cdef int regrow(self, Py_ssize_t nbytes, Py_ssize_t used) except -1:
        """Refit to nbytes copying only the first `used` bytes (growing in place would copy
        the whole old capacity); a capacity over 1.5x nbytes (an upfront guess far too large)
        is given back too, so the batch does not hold memory it will never fill."""
        if nbytes < used:
            nbytes = used
        if nbytes <= self.cap and self.cap - nbytes <= (nbytes >> 1):
            return 0
        return self._resize(nbytes, used)

    cdef object finish(self, Py_ssize_t nbytes):
        if self.cap >= _CACHE_MIN and nbytes < self.cap // 2 and nbytes < _CACHE_MIN:
            self._resize_down(nbytes)
        self.size = nbytes
        return pa.py_buffer(self)

    cdef void _resize_down(self, Py_ssize_t nbytes):
        # a big block mostly unused (a short batch): hand it back and keep a small copy
        cdef void* q = NULL
        if nbytes < 64:
            nbytes = 64
        if posix_memalign(&q, 64, <size_t>nbytes) != 0:
            return
        memcpy(q, self.ptr, nbytes)
        _account(nbytes - self.cap)
        _cache_give(self.ptr, self.cap)
        self.ptr = <uint8_t*>q
        self.cap = nbytes

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, <void*>(self.ptr if self.ptr != NULL else <uint8_t*>""),
                          self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


@cython.final
cdef class _CBuf:
    def __cinit__(self, bint zero=False):
        self.ptr = NULL
        self.cap = 0
        self.size = 0
        self.zero = zero

    def __dealloc__(self):
        free(self.ptr)

    cdef int ensure(self, Py_ssize_t nbytes) except -1 nogil:
        cdef Py_ssize_t new
        cdef uint8_t* p
        if nbytes <= self.cap:
            return 0
        new = self.cap * 2
        if new < nbytes:
            new = nbytes
        if new < 64:
            new = 64
        p = <uint8_t*>realloc(self.ptr, new)
        if p == NULL:
            with gil:
                raise MemoryError(f"cannot grow a header buffer to {new} bytes")
        if self.zero:
            memset(p + self.cap, 0, new - self.cap)
        self.ptr = p
        self.cap = new
        return 0

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, <void*>(self.ptr if self.ptr != NULL else <uint8_t*>""),
                          self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass
