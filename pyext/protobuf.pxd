# Protobuf values -> Arrow columns: the interpreter of the tables pyconsumer/values/protobuf.py
# compiles from a message descriptor (its nodes, fields, aux and blob), and the Confluent
# prefix scan (magic, schema id, message-index array). A message is read in two steps per
# level: a scan records each field's occurrences (chains of byte ranges and varints, so that a
# non-repeated field's last occurrence wins and a sub-message's occurrences merge), then the
# fields are written in declaration order into the Avro decoder's columns (AvCol, avro.pxd).
# Every byte is read through reader.pxd (pb_varint, pb_bytes); a bad value is a row error
# (columns rolled back, the row null), never an exception; a full column ends the row with
# PB_E_ROOM and the caller grows it (with the GIL) and runs the row again. Numbers mirror
# pyconsumer/values/protobuf.py.

cdef enum PbMode:
    PB_M_SCALAR = 0     # a scalar (or a list of them): the column, or the list's child
    PB_M_MESSAGE = 1    # a message: struct column of node `sub`
    PB_M_TIME = 2       # google.protobuf.Timestamp / Duration: int64 microseconds
    PB_M_WRAP = 3       # a wrapper type unwrapped: its field 1 as a scalar
    PB_M_MAP = 4        # a map: list column of entries (node `sub`, keys and values)
    PB_M_SKIP = 5       # not in the output (cut by the recursion depth): read as unknown
    PB_M_DUMMY = 6      # the null string column a kept empty message gets

cdef enum PbTarget:
    PB_T_I32 = 0
    PB_T_I64 = 1
    PB_T_F32 = 2
    PB_T_F64 = 3
    PB_T_BOOL = 4
    PB_T_STR = 5        # UTF-8 checked
    PB_T_BIN = 6
    PB_T_DEC = 7        # uint64 as decimal(20, 0)
    PB_T_ENUM_STR = 8   # the value's name
    PB_T_ENUM_INT = 9
    PB_T_U32_I64 = 10   # uint32 as int64

cdef enum PbFlag:
    PB_F_REPEATED = 1
    PB_F_PRESENCE = 2   # explicit presence: a value even when it is the default
    PB_F_HAS_DEFAULT = 4    # proto2 default: written when the field is absent
    PB_F_CLOSED_ENUM = 8    # an unknown number is an unknown field
    PB_F_PACKABLE = 16
    PB_F_REQUIRED = 32

cdef enum:
    PB_NODE_WORDS = 8   # col, field start, fields, lut start, lut length, oneofs, flags, -
    PB_FIELD_WORDS = 16 # number, value type, mode, col, sub, target, flags, oneof, enum start,
                        # enum count, default (int64 or blob offset), default length,
                        # unknown-enum prefix (blob offset, length), wire type of the field, -
    PB_NODE_MAP_ENTRY = 1

cdef enum PbErr:
    PB_E_ROOM = 1       # a column buffer is full: grow it and run the row again
    PB_E_WIRETYPE = 2   # field a (program index) with wire type b
    PB_E_BADWIRE = 3    # wire type a is not one a field may have here
    PB_E_FIELDNUM = 4   # field number a out of range
    PB_E_UTF8 = 5       # field a: invalid UTF-8
    PB_E_DEPTH = 6      # messages or groups nested over a deep
    PB_E_PACKED = 7     # field a: packed bytes b not a whole number of values
    PB_E_REQUIRED = 8   # required field a missing
    PB_E_TIME = 9       # field a: seconds b out of range in microseconds
    PB_E_GROUP = 10     # a group without its end (field number a)
    PB_E_HEADER = 11    # a value of a bytes shorter than its Confluent header
    PB_E_MAGIC = 12     # a magic byte a that is neither 0 nor 1
    PB_E_INDEX = 13     # a bad message-index array (a: 1 truncated, 2 count, 3 negative index)
    PB_E_UNKNOWN = 14   # slot a has no program (its reason says why)
    PB_E_MEMORY = 15    # the scan's scratch could not grow

ctypedef struct PbOcc:
    # one occurrence of a field in a message's bytes, chained to the field's next one
    int32_t next
    int32_t wt          # wire type
    Py_ssize_t pos      # the payload's first byte in the row (length-delimited: its bytes)
    Py_ssize_t len      # length-delimited: bytes
    uint64_t v          # varint or fixed value

ctypedef struct PbState:
    AvCol* cols
    const int64_t* nodes
    const int64_t* fields
    const int64_t* aux
    const uint8_t* blob
    const uint8_t* row  # the message bytes of the row (after the framing)
    Py_ssize_t row_len
    const Where* where
    int64_t index       # the row, for reader faults
    bint emit_defaults
    PbOcc* occ          # occurrences of the levels being read (a stack)
    Py_ssize_t nocc
    Py_ssize_t occ_cap
    int32_t* frm        # per level: chain heads, tails, oneof winners (a stack)
    Py_ssize_t nfrm
    Py_ssize_t frm_cap
    int depth
    int err             # PbErr of the row's failure
    int64_t ea          # its numbers
    int64_t eb
    Py_ssize_t epos     # byte of the message where it was found (-1: none)
    Py_ssize_t at       # where the last read began (a reader fault's byte)
    int grow_col        # PB_E_ROOM: which column, which buffer (0 entries, 1 bytes), how much
    int grow_bytes
    Py_ssize_t grow_need

ctypedef struct PbProgRef:
    # a program's tables for the row loop (the decode keeps the programs alive)
    const int64_t* nodes
    const int64_t* fields
    const int64_t* aux
    const uint8_t* blob
    bint emit_defaults

cdef class ProtobufProgram:
    # One compiled message: pyconsumer.values.protobuf.Program's tables, pinned and checked.
    cdef bytes _nodes
    cdef bytes _fields
    cdef bytes _aux
    cdef bytes _blob
    cdef Py_ssize_t nnodes
    cdef Py_ssize_t nfields
    cdef Py_ssize_t naux
    cdef readonly tuple kinds     # column kinds (avro.pxd's AvKind)
    cdef readonly tuple children  # AV_K_LIST: item column; else -1
    cdef readonly tuple widths
    cdef readonly tuple aligned   # one entry a row
    cdef readonly tuple names     # field names by program index, for row errors
    cdef readonly bint emit_defaults
    cdef int _check(self) except -1   # ValueError unless every reference is in bounds
    cdef int _check_field(self, const int64_t* f, const int64_t* nd, Py_ssize_t node,
                          Py_ssize_t fi) except -1   # one field of node's

# a message at node over a chain of occurrences (head; single: that one only): 0, -2 (a row
# error or PB_E_ROOM in st), -1 (a reader fault, raised)
cdef int pb_node(PbState* st, Py_ssize_t node, int32_t head, bint single) except -1 nogil
cdef int pb_varint(PbState* st, Reader* r, uint64_t* out) except -1 nogil   # the one varint read
cdef const uint8_t* pb_bytes(PbState* st, Reader* r, Py_ssize_t n) except NULL nogil
