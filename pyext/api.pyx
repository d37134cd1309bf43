# --------------------------------------------------------------------------- public API

@cython.final
cdef class CompletedFetch:
    """One partition's fetched record set, handed out at most N records per take."""

    def __init__(self, record_set, str topic, int32_t partition, int64_t fetch_offset, *,
                 bint check_crcs=True, str isolation_level="read_uncommitted",
                 aborted_transactions=None, bint include_headers=False,
                 key_deserializer=None, value_deserializer=None):
        self.w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                         isolation_level, aborted_transactions)
        self.include_headers = include_headers
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.discarded = False

    def take_records(self, Py_ssize_t max_records):
        """At most max_records ConsumerRecords, in offset order (empty when drained)."""
        if max_records < 0:
            raise ValueError(f"max_records must be >= 0, got {max_records}")
        if self.discarded or max_records == 0:
            return []
        return self.w.take_records(max_records, self.key_deserializer, self.value_deserializer)

    def take_arrow(self, Py_ssize_t max_records):
        """At most max_records rows as a pyarrow.RecordBatch (Spark's Kafka schema)."""
        if max_records < 0:
            raise ValueError(f"max_records must be >= 0, got {max_records}")
        if self.discarded or max_records == 0:
            return _ArrowBuilder(0, 0, 0, self.include_headers).finish(self.w.topic,
                                                                        self.w.partition)
        return self.w.take_arrow(max_records, self.include_headers)

    def take_arrow_split(self, Py_ssize_t max_records, int parts, run, Py_ssize_t min_bytes=0):
        """take_arrow(max_records) on several threads: the rest of the current batch, and the
        next whole compressed v2 batches whose records fit in what is left of max_records cut
        into ``parts`` runs of about equal bytes, each run decoded by its own cursor.
        ``run(calls)`` runs the zero-argument callables side by side and returns
        [(result, None) | (None, exception)] in order; no cut when the whole batches hold fewer
        than ``min_bytes`` bytes (handing work to a thread costs some 25 us). A list of
        RecordBatches in offset order (fewer rows than take_arrow may give: only whole batches
        are cut), or None when there is nothing to cut (fewer than two such batches, none
        compressed, an error pending, transactions to filter, an older format). A run that
        fails moves nothing: take_arrow then gives the same records and errors as if no cut
        had been tried."""
        cdef _Walker w = self.w
        cdef Py_ssize_t head = w.remaining if w.remaining > 0 and w.magic == 2 else 0
        cdef list subs
        cdef CompletedFetch sub
        cdef int64_t nfo
        if (w.remaining > 0 and head == 0) or head >= max_records:
            return None
        subs = self._split(max_records - head, parts, head > 0, min_bytes)
        if subs is None:
            return None
        calls = [functools.partial(sub.take_arrow, max_records) for sub in subs]
        if head:
            calls.insert(0, functools.partial(self.take_arrow, head))
        results = run(calls)
        taken = []
        if head:
            batch, error = results.pop(0)
            if error is not None or w.error is not None:
                for sub in subs:
                    sub.discard()
                if error is not None:
                    raise error
                return [batch]                 # the error comes with the next take
            taken.append(batch)
        for sub, (batch, error) in zip(subs, results):
            if error is not None or sub.w.error is not None or not sub.w.finished:
                for sub in subs:
                    sub.discard()
                return taken or None           # the batches after are taken here next
        # where taking those batches here would have left this cursor
        nfo = w.next_fetch_offset
        for sub, (batch, _) in zip(subs, results):
            if batch.num_rows:
                w.last_epoch = sub.w.last_epoch
            if sub.w.next_fetch_offset > nfo:
                nfo = sub.w.next_fetch_offset
            w.rs.pos += sub.w.rs.end           # the runs cover the batches cut, in order
        w.next_fetch_offset = nfo
        w.have_batch = True
        w.batch_next_offset = sub.w.batch_next_offset    # sub: the last run
        w.maybe_finish()
        taken += [batch for batch, _ in results]
        if not any(batch.num_rows for batch in taken):
            # all below the position, or control batches: never an empty take before the end
            # (a caller takes that as "nothing more here")
            taken.append(self.take_arrow(max_records))
        return taken

    cdef list _split(self, Py_ssize_t max_records, int parts, bint head, Py_ssize_t min_bytes):
        cdef _Walker w = self.w
        cdef Reader p
        cdef BatchHeader h
        cdef Py_ssize_t start, total, lo, at, last, i, k, target
        cdef int64_t count = 0
        cdef bint compressed = False
        cdef list ends = []
        cdef list cuts = []
        cdef CompletedFetch sub
        if (parts < 2 or self.discarded or w.finished or w.error is not None
                or (w.read_committed and w.aborted)):
            return None
        p = w.rs
        start = p.pos
        while batch_peek_v2(&p, &h):
            if h.base_offset + h.last_offset_delta >= w.next_fetch_offset:
                if count + h.count > max_records:
                    break
                count += h.count               # (batches below the position only get skipped)
                compressed = compressed or (h.attributes & ATTR_CODEC) != 0
            p.pos += LOG_OVERHEAD + <Py_ssize_t>h.length
            ends.append(p.pos)
        total = p.pos - start
        if len(ends) < (1 if head else 2) or not compressed or total < min_bytes:
            return None
        last = len(ends) - 1                   # (this module does not wrap negative indices)
        i = 0
        for k in range(1, parts):              # the batch end nearest to each share of bytes
            target = start + total * k // parts
            while i < last - 1 and abs(<Py_ssize_t>ends[i + 1] - target) <= abs(
                    <Py_ssize_t>ends[i] - target):
                i += 1
            if i >= last or (cuts and ends[i] <= cuts[len(cuts) - 1]):
                break
            cuts.append(ends[i])
            i += 1
        cuts.append(ends[last])
        if len(cuts) < (1 if head else 2):     # (the rest of the current batch is a run too)
            return None
        # the record set may be a slice of its owner (a response frame): cut the owner
        at = <const uint8_t*>w.rs.buf - <const uint8_t*>w.view.buf
        view = memoryview(w.owner)
        subs = []
        lo = start
        for e in cuts:
            sub = CompletedFetch(view[at + lo:at + <Py_ssize_t>e], w.topic, w.partition,
                                 w.next_fetch_offset, check_crcs=w.check_crcs,
                                 isolation_level=("read_committed" if w.read_committed
                                                  else "read_uncommitted"),
                                 include_headers=self.include_headers)
            sub.w.open_end = True              # this cursor decides where its end leaves us
            subs.append(sub)
            lo = e
        return subs

    def set_include_headers(self, bint include_headers):
        """Whether later take_arrow calls build the headers column (poll_arrow asks per call;
        without headers, magic-2 batches take the faster fill path)."""
        self.include_headers = include_headers

    @property
    def next_fetch_offset(self):
        return self.w.next_fetch_offset

    @property
    def is_drained(self):
        if self.discarded:
            return True
        if self.w.error is not None:
            return False                       # the next take raises it: not drained
        if self.w.finished:
            return True
        self.w.maybe_finish()
        return self.w.finished

    @property
    def incomplete_batch(self):
        """(offset, declared size, bytes present) of the incomplete batch this record set
        ends with, once the cursor stopped there (the broker cut the batch at a size limit,
        or the log ends mid-batch); -1 for what the bytes do not say; None otherwise."""
        if self.w.cut_have == 0:
            return None
        return (self.w.cut_offset, self.w.cut_size, self.w.cut_have)

    @property
    def last_epoch(self):
        return None if self.w.last_epoch < 0 else self.w.last_epoch

    @property
    def topic(self):
        return self.w.topic

    @property
    def partition(self):
        return self.w.partition

    def discard(self):
        """Drop what is left; later takes return nothing and the position stays put."""
        self.discarded = True
        self.w.finished = True
        self.w.remaining = 0
        self.w.release()

    def __repr__(self):
        return (f"CompletedFetch(topic={self.w.topic!r}, partition={self.w.partition}, "
                f"next_fetch_offset={self.w.next_fetch_offset}, drained={self.is_drained})")


_NO_LIMIT = (1 << 62)


def decode_records(record_set, str topic, int32_t partition, *, bint check_crcs=True,
                   int64_t fetch_offset=0, str isolation_level="read_uncommitted",
                   aborted_transactions=None, key_deserializer=None, value_deserializer=None):
    """Every record of a record set as ConsumerRecords, in offset order."""
    cdef _Walker w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                             isolation_level, aborted_transactions)
    cdef list out = w.take_records(_NO_LIMIT, key_deserializer, value_deserializer)
    while not w.finished:
        # take_records stops early only before a record whose deserializer failed (it hands
        # out what it has first); taking again raises that RecordDeserializationError.
        out += w.take_records(_NO_LIMIT, key_deserializer, value_deserializer)
    return out


def decode_arrow(record_set, str topic, int32_t partition, *, bint check_crcs=True,
                 bint include_headers=False, int64_t fetch_offset=0,
                 str isolation_level="read_uncommitted", aborted_transactions=None):
    """Every record of a record set as one pyarrow.RecordBatch (Spark's Kafka schema)."""
    cdef _Walker w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                             isolation_level, aborted_transactions)
    batch = w.take_arrow(_NO_LIMIT, include_headers)
    if w.error is not None:
        raise w.error
    if not w.finished:
        raise OverflowError(
            f"record set of {topic}-{partition} has more than 2 GiB of keys or values, more than "
            f"one Arrow batch can hold; drain it with CompletedFetch.take_arrow instead")
    return batch
