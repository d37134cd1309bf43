# Contract of the extension module pyconsumer._records, whose bodies pyext/records.pyx
# includes. Cython looks for a module's own .pxd under the module's name (pyconsumer/_records)
# on the include path, hence this file's place; it only gathers the contracts of the jobs,
# each in its own file next to its body, in the order the bodies are included.
from cpython.ref cimport PyObject
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)

cdef class _Walker                  # walker.pxd: used by the jobs declared before it
cdef class _FetchBody               # fetch.pxd: errors.pyx hands it its readers' faults

include "reader.pxd"                # bounds-checked reads, the one varint routine
include "errors.pxd"                # injected error classes, the one CorruptRecordError
include "buffers.pxd"               # aligned output buffers and the freed-block cache
include "codecs.pxd"                # gzip / snappy / lz4 / zstd through cramjam
include "batch.pxd"                 # batch log header, v2 batch header, CRC32C
include "record_v2.pxd"             # the one v2 record parser
include "legacy.pxd"                # magic v0/v1 message sets
include "index.pxd"                 # the record-set index: batch boundaries, end, bound, cuts
include "fetch.pxd"                 # the Fetch response body in one pass, with the indexes
include "arrow.pxd"                 # the Arrow column builder and its fill loops
include "walker.pxd"                # the per-partition cursor
include "record.pxd"                # ConsumerRecord
include "api.pxd"                   # CompletedFetch, decode_records, decode_arrow
include "avro.pxd"                  # Avro values -> Arrow columns (pyconsumer.values)
include "protobuf.pxd"              # Protobuf values -> Arrow columns, on avro.pxd's columns
include "json.pxd"                  # JSON values -> Arrow columns, directed by the Arrow type
