# Avro values -> Arrow columns: the interpreter of the flat programs that
# pyconsumer/values/avro.py compiles from a (writer, reader) schema pair, and the Confluent
# framing scan. Every byte of a value is read through reader.pxd; columns are _PBuf blocks
# (buffers.pxd) written through raw pointers with the GIL released. A bad value is a row
# error (its columns rolled back, the row null), never an exception; a buffer too small
# ends the row with AV_E_ROOM, and the caller grows the buffer (with the GIL) and runs the
# row again. Opcodes and column kinds mirror pyconsumer/values/avro.py.

cdef enum AvOp:
    AV_NULLS = 0        # a: column; a null there (and in its struct children)
    AV_STRUCT = 1       # a: struct column; one valid entry
    AV_NULLTYPE = 2     # a: null-type column; one entry
    AV_BOOL = 3         # a: column
    AV_INT = 4          # a: column, b: target (0 i32, 1 i64, 2 f32, 3 f64), c: multiplier
    AV_LONG = 5         # same
    AV_FLOAT = 6        # a: column, b: target (2 f32, 3 f64)
    AV_DOUBLE = 7       # a: column
    AV_BYTES = 8        # a: column, b: 1 if the column is a string (UTF-8 checked)
    AV_FIXED = 9        # a: column, b: size
    AV_DEC_BYTES = 10   # a: column, b: precision
    AV_DEC_FIXED = 11   # a: column, b: size, c: precision
    AV_ENUM = 12        # a: column, b: aux table (blob offset, length | -1, reason), c: symbols
    AV_ARRAY = 13       # a: list column (-1: skip), b: body length, c: fewest bytes an item takes
    AV_UNION = 14       # a: branches, b: aux table (body start, body length), c: pc after
    AV_DEFAULT = 15     # a: blob offset, b: length, c: body length (the body reads the blob)
    AV_FAIL = 16        # a: reason index: a row error
    AV_SKIP_VARINT = 17
    AV_SKIP_N = 18      # a: bytes
    AV_SKIP_BYTES = 19

cdef enum AvKind:
    AV_K_NULL = 0
    AV_K_BOOL = 1
    AV_K_I32 = 2
    AV_K_I64 = 3
    AV_K_F32 = 4
    AV_K_F64 = 5
    AV_K_BIN = 6        # int32 offsets + bytes (string and binary)
    AV_K_DEC = 7        # 16-byte little-endian two's complement
    AV_K_STRUCT = 8
    AV_K_LIST = 9       # int32 offsets into its child column (lists and maps)

cdef enum AvErr:
    AV_E_FAULT = 1      # a reader fault (a: 1 truncated, 2 bad varint, 3 negative length)
    AV_E_ROOM = 2       # a column buffer is full: grow it and run the row again
    AV_E_UNION = 3      # union index a, b branches
    AV_E_UTF8 = 4       # invalid UTF-8 in a string
    AV_E_FAIL = 5       # the program's reason a
    AV_E_ENUM = 6       # enum index a, b symbols
    AV_E_COUNT = 7      # array/map block of a items, b bytes left
    AV_E_RANGE = 8      # an int or long varint out of its type's range
    AV_E_BOOL = 9       # a boolean byte a that is neither 0 nor 1
    AV_E_TRAILING = 10  # a bytes left after the value
    AV_E_OVERFLOW = 11  # a timestamp in milliseconds a out of range in microseconds
    AV_E_DECIMAL = 12   # a decimal of a bytes out of range (b: 1 too long, 2 over precision)
    AV_E_HEADER = 13    # a value of a bytes is shorter than its Confluent header
    AV_E_MAGIC = 14     # a Confluent magic byte a that is neither 0 nor 1
    AV_E_UNKNOWN = 15   # the program slot a has no program (its reason says why)
    AV_E_BLOCK = 16     # a negative block byte size a
    AV_E_ZERO = 17      # over the limit of zero-byte items (a) in one value
    AV_E_DEPTH = 18     # bodies nested over a deep (a forged program)

ctypedef struct AvCol:
    int kind
    int child           # AV_K_LIST: the item (or map entries) column
    int width           # bytes per value (fixed-width kinds)
    bint aligned        # one entry a row (the root and its struct children, not in a list)
    Py_ssize_t n        # entries
    Py_ssize_t used     # AV_K_BIN: data bytes
    Py_ssize_t cap      # entries the validity and value/offset buffers hold
    Py_ssize_t bcap     # AV_K_BIN: data bytes the data buffer holds
    uint8_t* valid      # validity bitmap
    uint8_t* data       # values, a bitmap (bool) or int32 offsets (n + 1)
    uint8_t* bytes      # AV_K_BIN data
    Py_ssize_t snap_n   # n and used at the start of the row, to roll a bad row back (the
                        # columns not aligned; aligned ones go back to the root's count)
    Py_ssize_t snap_used

ctypedef struct AvProg:
    const int64_t* code # 4 per instruction
    Py_ssize_t ncode    # instructions
    const int64_t* aux
    const uint8_t* blob
    Py_ssize_t blob_len

ctypedef struct AvState:
    AvCol* cols
    int ncols
    const int64_t* code
    const int64_t* aux
    const uint8_t* blob
    int err             # AvErr of the row's failure
    int64_t ea          # its numbers
    int64_t eb
    Py_ssize_t epos     # byte of the value where it was found (-1: none)
    int grow_col        # AV_E_ROOM: which column, which buffer (0 entries, 1 bytes), how much
    int grow_bytes
    Py_ssize_t grow_need
    int64_t zero_items  # zero-byte array items read in this value
    int depth           # bodies entered (array items, union branches, defaults)

cdef class AvroProgram:
    # One compiled (writer, reader) pair: pyconsumer.values.avro.Program's tables, pinned.
    cdef bytes _code
    cdef bytes _aux
    cdef bytes _blob
    cdef AvProg prog
    cdef readonly tuple kinds     # column kinds
    cdef readonly tuple children  # AV_K_LIST: item column; else -1
    cdef readonly tuple widths
    cdef readonly tuple aligned   # one entry a row: the columns of the root's null list
    cdef int _check(self) except -1   # ValueError unless every reference is in bounds
    cdef readonly tuple reasons   # the row errors AV_FAIL and enums name by index

ctypedef struct _AvKey:
    # a distinct Confluent prefix of a frame scan
    int64_t id          # a schema id (>= 0), or -1: the GUID below
    uint8_t guid[16]

cdef class _AvColumns:
    # The output columns of one decode, sized from the first program's columns.
    cdef AvCol* cols
    cdef int ncols
    cdef list valid     # _PBuf per column (None: a null-type column)
    cdef list data
    cdef list bytes_
    cdef int _grow(self, int k, int in_bytes, Py_ssize_t need) except -1  # with the GIL
    cdef list finish(self)  # per column (entries, validity, values/offsets, data) pa.Buffers

# the interpreter: 0, -2 (a row error or AV_E_ROOM in st) or -1 (a reader fault, raised)
cdef int av_run(AvState* st, Reader* r, Py_ssize_t pc, Py_ssize_t end) except -1 nogil
cdef int av_nulls(AvState* st, int col) noexcept nogil    # 0, or -2 (AV_E_ROOM)
cdef int av_long(AvState* st, Reader* r, int64_t* out) except -1 nogil  # zig-zag, 64-bit
cdef int av_int(AvState* st, Reader* r, int64_t* out) except -1 nogil   # zig-zag, 32-bit
# the distinct-key table of avro_frame_scan: the key's index, or -1 (out of memory)
cdef int _av_key_slot(_AvKey** keys, Py_ssize_t* nk, Py_ssize_t* kcap, int32_t** table,
                      Py_ssize_t* tcap, const _AvKey* k) noexcept nogil
