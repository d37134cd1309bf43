# Errors of the decoder. The exception classes are pyconsumer.errors' own, injected by
# pyconsumer.records at import through _set_error_classes (the extension imports nothing
# from pyconsumer, so either can be imported first). corrupt() is the one place that raises
# CorruptRecordError (or its UnsupportedCodecError), in the one message format:
#   "<what> at byte <pos> of the record set (topic=T, partition=P, offset=O)"
#   "<what> at byte <i> of the records decompressed from the batch at byte <pos> of the
#    record set (topic=T, partition=P, offset=O)"
# where the "(topic=..., offset=O)" part is CorruptRecordError's own and O is the record's
# offset when known, else its batch's. The byte is where the problem was found: a batch's (or
# message's) first byte for checks of the whole batch (length, magic, CRC, count, codec), a
# record's first byte for a record whose fields do not add up to its length, otherwise where
# the reader stood (just past a length field that is impossible, at a read that runs short).

cdef object CorruptRecordError          # pyconsumer.errors.CorruptRecordError
cdef object UnsupportedCodecError       # its subclass for an unknown codec id
cdef object RecordDeserializationError  # a key or value deserializer raised
cdef object KafkaProtocolError          # a Fetch response body that does not parse (fetch.pyx)

cdef int corrupt(object topic, int32_t partition, int64_t offset, str what, Py_ssize_t pos,
                 Py_ssize_t inner=*, object cls=*, object cause=*) except -1
cdef int corrupt_at(const Reader* r, str what, Py_ssize_t at=*, object cls=*,
                    object cause=*) except -1   # where: r's position (or byte at of its region)
cdef int on_fault(PyObject* topic, int32_t partition, int64_t offset, Py_ssize_t origin,
                  int inflated, Py_ssize_t pos, int fault, int64_t a,
                  int64_t b) except -1   # wire.h's hook: a reader's Fault, the reader by value
