# --------------------------------------------------------------------------- errors

class _ErrorClassesNotSet(Exception):
    """Stands for the error classes until pyconsumer.records injects them (never raised)."""


CorruptRecordError = _ErrorClassesNotSet
UnsupportedCodecError = _ErrorClassesNotSet
RecordDeserializationError = _ErrorClassesNotSet
KafkaProtocolError = _ErrorClassesNotSet


def _set_error_classes(corrupt_record, unsupported_codec, record_deserialization,
                       protocol_error=None) -> None:
    """Use pyconsumer.errors' classes (pyconsumer.records calls this once, at import);
    protocol_error is the Fetch response decoder's (left as it was when None)."""
    global CorruptRecordError, UnsupportedCodecError, RecordDeserializationError
    global KafkaProtocolError
    if not issubclass(unsupported_codec, corrupt_record):
        raise TypeError(f"{unsupported_codec!r} must subclass {corrupt_record!r}")
    CorruptRecordError = corrupt_record
    UnsupportedCodecError = unsupported_codec
    RecordDeserializationError = record_deserialization
    if protocol_error is not None:
        KafkaProtocolError = protocol_error


cdef int corrupt(object topic, int32_t partition, int64_t offset, str what, Py_ssize_t pos,
                 Py_ssize_t inner=-1, object cls=None, object cause=None) except -1:
    """Raise CorruptRecordError (or cls, a subclass): what was wrong, at which byte of the
    record set (and of the decompressed records, inner >= 0), naming topic, partition and
    offset (negative: unknown)."""
    if CorruptRecordError is _ErrorClassesNotSet:
        raise RuntimeError("pyconsumer._records has no error classes: import pyconsumer.records")
    if inner >= 0:
        where = (f"at byte {inner} of the records decompressed from the batch at byte {pos} "
                 f"of the record set")
    else:
        where = f"at byte {pos} of the record set"
    err = (CorruptRecordError if cls is None else cls)(
        f"{what} {where}", topic=topic, partition=None if partition < 0 else partition,
        offset=None if offset < 0 else offset)
    if cause is not None:
        raise err from cause
    raise err


cdef int corrupt_at(const Reader* r, str what, Py_ssize_t at=-1, object cls=None,
                    object cause=None) except -1:
    """corrupt() where r is: its position, or byte ``at`` of its region."""
    cdef Py_ssize_t p = r.pos if at < 0 else at
    cdef const Where* w = r.where
    topic = <object>w.topic if w.topic is not NULL else None
    if w.inflated:
        return corrupt(topic, w.partition, r.offset, what, w.origin, p, cls, cause)
    return corrupt(topic, w.partition, r.offset, what, w.origin + p, -1, cls, cause)


cdef int on_fault(PyObject* topic, int32_t partition, int64_t offset, Py_ssize_t origin,
                  int inflated, Py_ssize_t pos, int fault, int64_t a, int64_t b) except -1:
    """A reader's fault (reader.pxd Fault) as CorruptRecordError; wire.h calls it with the
    GIL held. A Fetch response body's reader names its decoder as the topic: the fault is
    the decoder's to word (fetch.pyx)."""
    cdef Where w
    cdef Reader r
    if topic != NULL and type(<object>topic) is _FetchBody:
        return (<_FetchBody>topic).reader_fault(pos, fault, a, b)
    w.topic = topic
    w.partition = partition
    w.origin = origin
    w.inflated = inflated
    rd_init(&r, <const uint8_t*>"", 0, &w, offset)
    r.pos = pos
    if fault == F_SHORT:
        what = f"Can't read {a} bytes, {b} left"
    elif fault == F_VARINT:
        what = f"Malformed varint (longer than {a} bytes)"
    elif fault == F_LENGTH:
        what = f"Invalid length {a}"
    elif fault == F_RECORD_LENGTH:
        what = f"Record length {a} does not match its fields ({b} bytes)"
    elif fault == F_TRAILING:
        what = f"Incorrect declared batch size: {a} bytes remain after the last record"
    else:
        what = f"Reader fault {fault} ({a}, {b})"
    return corrupt_at(&r, what)


pyx_set_fault_hook(<pyx_fault_hook>on_fault)
