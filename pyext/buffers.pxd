# Output buffers of the Arrow builder. _PBuf: 64-byte aligned memory written through a raw
# pointer and exported through the buffer protocol (pyarrow.py_buffer keeps it alive); large
# blocks go back to a small process-wide cache when freed, so that the next batch reuses
# resident pages instead of faulting fresh ones in. _CBuf: plain malloc'd bytes that grow
# without the GIL (the headers column).

cdef class _PBuf:
    cdef uint8_t* ptr            # the data
    cdef Py_ssize_t cap          # usable bytes
    cdef Py_ssize_t size         # bytes exported by finish()
    cdef int fill                # byte new bytes get on growth (validity bitmaps); -1: none
    cdef int _resize(self, Py_ssize_t new, Py_ssize_t keep) except -1  # capacity >= new, keep bytes
    cdef int ensure(self, Py_ssize_t nbytes) except -1     # grow (x1.5) to at least nbytes
    cdef int ensure_to(self, Py_ssize_t nbytes) except -1  # grow to exactly nbytes if larger
    cdef int regrow(self, Py_ssize_t nbytes, Py_ssize_t used) except -1  # refit, copy used
    cdef object finish(self, Py_ssize_t nbytes)          # fix the size, return a pa.Buffer
    cdef void _resize_down(self, Py_ssize_t nbytes)      # move a small result off a big block


cdef class _CBuf:
    cdef uint8_t* ptr            # data (NULL until the first growth)
    cdef Py_ssize_t cap          # allocated bytes
    cdef Py_ssize_t size         # bytes exported to Python at finish
    cdef bint zero               # zero new bytes on growth (validity bitmaps)
    cdef int ensure(self, Py_ssize_t nbytes) except -1 nogil   # grow (x2) to at least nbytes


cdef inline void set_bit(uint8_t* bits, Py_ssize_t i) noexcept nogil:
    bits[i >> 3] |= <uint8_t>(1 << (i & 7))


cdef inline void clear_bit(uint8_t* bits, Py_ssize_t i) noexcept nogil:
    bits[i >> 3] &= <uint8_t>~(1 << (i & 7))
