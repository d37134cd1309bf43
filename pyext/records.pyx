# pyconsumer._records: Kafka record sets (a Fetch response's records for one partition) ->
# ConsumerRecord objects or Arrow columns, and the per-partition cursor that drains them.
#
# One extension module (every call between the jobs below stays a C call in one translation
# unit, inlined where it matters), built from the job files this one includes. Each job's
# contract is its .pxd, gathered by pyconsumer/_records.pxd; the bodies follow in order:
#
#   reader.pxd     bounds-checked reads, the one varint routine (inline, contract only)
#   errors         error classes injected by pyconsumer.records; the one CorruptRecordError
#   buffers        aligned Arrow output buffers and the cache of freed blocks
#   codecs         gzip / snappy / lz4 / zstd through cramjam
#   batch          the log header of every batch, the v2 batch header and its CRC32C
#   record_v2      the one v2 record parser (inline fast path; the careful path out of line)
#   legacy         magic v0/v1 message sets
#   index          the record-set index: where the batches are, from one pass over headers
#   fetch          the Fetch response body in one pass, each record set's index built in it
#   record         ConsumerRecord
#   arrow          the Arrow builder and its fill loops
#   walker         the cursor: batches, transactions, takes
#   api            CompletedFetch (and its cut into runs), decode_records, decode_arrow
#   avro           Avro values -> Arrow columns: the programs of pyconsumer.values.avro,
#                  the Confluent prefix scan (AvroProgram, avro_decode, avro_frame_scan)
#   protobuf       Protobuf values -> Arrow columns: the programs of pyconsumer.values.protobuf,
#                  the Confluent prefix with its message indexes (ProtobufProgram,
#                  protobuf_decode, protobuf_frame_scan)
#
# The module imports nothing from pyconsumer (pyconsumer.records imports it, then injects
# pyconsumer.errors' classes), so that either can be imported first.
cimport cython

cdef extern from "Python.h":
    # a read-only memoryview over C memory, for the CRC32C and codec calls
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ

include "errors.pyx"
include "buffers.pyx"
include "codecs.pyx"
include "batch.pyx"
include "record_v2.pyx"
include "legacy.pyx"
include "index.pyx"
include "fetch.pyx"
include "record.pyx"
include "arrow.pyx"
include "walker.pyx"
include "api.pyx"
include "avro.pyx"
include "protobuf.pyx"
include "json.pyx"
