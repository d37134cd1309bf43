"""``pyconsumer ingest``'s lag behind latest: offsets per partition, bytes at a per-partition
or one run-wide bytes-per-record figure, and how the progress line and summary print it."""
from __future__ import annotations

from pyconsumer.ingest.lag import PartitionLag, format_lag, partition_lag, total_text


def test_offsets_behind_and_bytes_per_partition() -> None:
    latest = {("t", 0): 100, ("t", 1): 50, ("u", 0): 7}
    reached = {("t", 0): 40, ("t", 1): 50}
    lags = partition_lag(latest, reached, {("t", 0): 14.0, ("u", 0): 2.5})
    assert lags == [PartitionLag("t", 0, 60, 840), PartitionLag("t", 1, 0, 0),
                    PartitionLag("u", 0, 7, 18)]      # 17.5 rounds to 18; u-0 from offset 0
    assert total_text(lags) == "67 records (~858 B)"
    # a partition behind with no estimate: the total has none either
    unknown = partition_lag(latest, reached, {("t", 0): 14.0})
    assert unknown[2] == PartitionLag("u", 0, 7, None)
    assert total_text(unknown) == "67 records"
    # one figure for every partition; a run past latest (a race) counts 0, not negative
    assert partition_lag({("t", 0): 10}, {("t", 0): 12}, 3.0) == [PartitionLag("t", 0, 0, 0)]
    assert partition_lag({("t", 0): 10}, {}, None) == [PartitionLag("t", 0, 10, None)]


def test_summary_table_lists_only_the_partitions_behind() -> None:
    lags = [PartitionLag("t", 0, 1200, 16800), PartitionLag("t", 1, 0, 0),
            PartitionLag("t", 2, 3, None)]
    text = format_lag(lags)
    lines = text.splitlines()
    assert lines[0] == "behind latest: 1,203 records"
    assert [line.split() for line in lines[1:] if line.strip().startswith("t ")] == [
        ["t", "0", "1,200", "16,800"], ["t", "2", "3", "?"]]
    assert format_lag([PartitionLag("t", 0, 0, 0)]) == \
        "  behind latest: none (1 partition at its latest offset)"
