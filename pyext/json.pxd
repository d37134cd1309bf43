# JSON values -> Arrow columns, directed by the Arrow type the values decode into: the
# program (JsonProgram, compiled once per type by pyconsumer/values/json_compiled.py) lists
# the columns in pre-order and, per struct, its field names in a hash table. One parse per
# value writes the columns through raw pointers with the GIL released; every byte is read
# through _jpeek. A value the parser cannot give exactly as the Python reader
# (pyconsumer/values/json_rows.py) does -- every bad value, and the rare good one it leaves
# to that reader (a repeated key, a zone name, ...) -- is "deferred": its
# columns are rolled back, the row is null, and json_decode names it for the Python reader.

cdef enum JKind:
    JK_STRUCT = 0
    JK_LIST = 1         # int32 offsets into its child column
    JK_BOOL = 2
    JK_I8 = 3
    JK_I16 = 4
    JK_I32 = 5
    JK_I64 = 6
    JK_F32 = 7
    JK_F64 = 8
    JK_STR = 9          # int32 offsets + UTF-8 bytes
    JK_TS = 10          # int64 microseconds, UTC (a zoned timestamp)
    JK_DATE = 11        # int32 days
    JK_DEC = 12         # 16-byte little-endian two's complement, unscaled (decimal128)
    JK_MAP = 13         # int32 offsets into its child, a struct column of (key STRING, value)
    JK_TSN = 14         # int64 microseconds of a wall-clock time (TIMESTAMP_NTZ)
    JK_BIN = 15         # int32 offsets + bytes, from base64 text (BINARY)

cdef enum JStatus:
    J_OK = 0
    J_DEFER = 1         # the value goes to the Python reader
    J_NOMEM = 2         # a column buffer could not grow
    J_BIG = 3           # a column would pass Arrow's int32 offsets

ctypedef struct JSpec:
    # one column of the program
    int kind
    int width           # bytes per value (fixed-width kinds)
    int child           # JK_LIST: the item column; JK_MAP: the entries struct column
    int fstart          # JK_STRUCT: its first field in the field table
    int nfields
    int tstart          # JK_STRUCT: its hash table's first slot
    uint32_t tmask      # its table's size - 1 (a power of two)
    int precision       # JK_DEC: digits, 1..38
    int scale           # JK_DEC: digits after the point, 0..precision

ctypedef struct JField:
    int col             # the field's column
    int name_at         # its name's first byte in the names blob
    int name_len

ctypedef struct JCol:
    # one output column of a decode
    Py_ssize_t n        # entries
    Py_ssize_t used     # JK_STR: data bytes
    Py_ssize_t nulls
    Py_ssize_t cap      # entries the validity and value buffers hold
    Py_ssize_t bcap     # JK_STR: bytes the data buffer holds
    uint8_t* valid      # validity bitmap
    uint8_t* data       # values, a bitmap (bool) or int32 offsets (n + 1)
    uint8_t* bytes      # JK_STR data
    Py_ssize_t snap_n   # n, used and nulls at the start of the row (a deferred row rolls back)
    Py_ssize_t snap_used
    Py_ssize_t snap_nulls

ctypedef struct JParse:
    const uint8_t* p    # the next byte
    const uint8_t* end  # past the value's last byte
    const JSpec* specs
    const JField* fields
    const int32_t* table
    const uint8_t* names
    JCol* cols
    uint8_t* seen       # per field: its key was met in the object being read
    int depth           # containers open

cdef class JsonProgram:
    # One compiled Arrow struct type: its column specs, fields, hash tables and names.
    cdef bytes _specs
    cdef bytes _fields
    cdef bytes _table
    cdef bytes _names
    cdef int ncols
    cdef int nfields
    cdef readonly object arrow_type   # the struct type the columns build

# the parsers: J_OK, or the JStatus that stops the value
cdef int _j_value(JParse* st, int c) noexcept nogil     # one value into column c (ws skipped)
cdef int _j_skip(JParse* st) noexcept nogil             # one value checked and passed over
cdef int _j_null(JParse* st, int c) noexcept nogil      # a null entry (struct: its fields too)
