# --------------------------------------------------------------------------- public API

@cython.final
cdef class CompletedFetch:
    """One partition's fetched record set, handed out at most N records per take."""

    def __init__(self, record_set, str topic, int32_t partition, int64_t fetch_offset, *,
                 bint check_crcs=True, str isolation_level="read_uncommitted",
                 aborted_transactions=None, bint include_headers=False,
                 key_deserializer=None, value_deserializer=None, RecordSetIndex index=None):
        self.w = _Walker(record_set, topic, partition, fetch_offset, check_crcs,
                         isolation_level, aborted_transactions)
        if index is not None:
            self.w.use_index(index)            # built when the response arrived: not again
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

    def cut(self, Py_ssize_t max_records, int parts, Py_ssize_t min_bytes=0):
        """Plain cursors for a take_arrow(max_records) on several threads: the rest of the
        current batch (``head`` rows, taken here) and the next whole compressed v2 batches
        whose records fit in what is left of max_records, cut into ``parts`` runs of about
        equal bytes at the index's cut points, each a CompletedFetch of its own. (head, runs),
        or None when there is nothing to cut (fewer than two such batches, none compressed,
        fewer than ``min_bytes`` bytes, an error pending, transactions to filter, an older
        format). Take each run to its end, then join() them; a run that fails is discarded
        with the others, and this cursor then gives the same records and errors as if no cut
        had been tried."""
        cdef _Walker w = self.w
        cdef Py_ssize_t head = w.remaining if w.remaining > 0 and w.magic == 2 else 0
        cdef list parts_
        cdef _Walker part
        cdef CompletedFetch run
        if self.discarded or (w.remaining > 0 and head == 0) or head >= max_records:
            return None
        parts_ = w.split(max_records - head, parts, head > 0, min_bytes)
        if parts_ is None:
            return None
        runs = []
        for part in parts_:
            run = CompletedFetch.__new__(CompletedFetch)
            run.w = part
            run.include_headers = self.include_headers
            run.key_deserializer = run.value_deserializer = None
            run.discarded = False
            runs.append(run)
        return head, runs

    def join(self, list runs, list rows):
        """Move past the runs cut() gave, each taken to its end giving rows[i] rows, as if
        their batches were taken here: True. False, moving nothing, when a run did not end
        cleanly (an error pending, or not drained)."""
        cdef CompletedFetch run
        for run in runs:
            if run.w.error is not None or not run.w.finished:
                return False
        for run, n in zip(runs, rows):
            self.w.absorb(run.w, n > 0)
        self.w.maybe_finish()
        return True

    @property
    def pending_error(self):
        """The error the next take raises (records before it were handed out), or None."""
        return self.w.error

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
        self.w.drop()

    def __repr__(self):
        return (f"CompletedFetch(topic={self.w.topic!r}, partition={self.w.partition}, "
                f"next_fetch_offset={self.w.next_fetch_offset}, drained={self.is_drained})")


def take_arrow_many(list cursors, list budgets, bint include_headers=False):
    """take_arrow(budgets[i]) of each cursors[i] in turn, into one pyarrow.RecordBatch: the
    rows of those takes one after another, without a batch per cursor and their concatenation
    (a poll over many small partitions). Stops after the first cursor that gave no rows, is
    not drained after its take (its budget ended first, or an error waits for its next take:
    pending_error), or filled the batch (2 GiB). Returns (batch, rows): rows[i] the rows of
    cursors[i], one entry per cursor taken (the last one is where it stopped)."""
    cdef list walkers = []
    cdef list rows = []
    cdef list segments = []
    cdef CompletedFetch c
    cdef _Walker w
    cdef _ArrowBuilder b
    cdef Py_ssize_t budget, start
    cdef int clean
    if len(budgets) != len(cursors):
        raise ValueError(f"take_arrow_many: {len(cursors)} cursors but {len(budgets)} budgets")
    for c, budget in zip(cursors, budgets):
        if budget < 0:
            raise ValueError(f"max_records must be >= 0, got {budget}")
        walkers.append(c.w)
    b = arrow_builder_many(walkers, budgets, include_headers)
    for c, budget in zip(cursors, budgets):
        w = c.w
        start = b.n
        clean = 1 if c.discarded or budget == 0 else w.take_arrow_into(b, start + budget,
                                                                       include_headers)
        rows.append(b.n - start)
        segments.append((w.topic, w.partition, b.n - start))
        if not clean or b.full or b.n == start or not (c.discarded or w.finished):
            break
    return b.finish_segments(segments), rows


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
