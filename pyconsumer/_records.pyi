"""Type stubs for the compiled pyconsumer._records module (sources in pyext/)."""
import sys
from collections.abc import Callable, Iterable
from typing import Any, final

from typing import TypeAlias

if sys.version_info >= (3, 12):
    from collections.abc import Buffer as _Buffer
else:
    _Buffer: TypeAlias = bytes | bytearray | memoryview

import pyarrow as pa

@final
class ConsumerRecord:
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def key(self) -> Any: ...
    @property
    def value(self) -> Any: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def leader_epoch(self) -> int | None: ...
    @property
    def serialized_key_size(self) -> int: ...
    @property
    def serialized_value_size(self) -> int: ...
    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: Any,
        value: Any,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        leader_epoch: int | None = None,
        serialized_key_size: int = -1,
        serialized_value_size: int = -1,
    ) -> None: ...
    def __eq__(self, other: object, /) -> bool: ...

@final
class CompletedFetch:
    def __init__(
        self,
        record_set: _Buffer | None,
        topic: str,
        partition: int,
        fetch_offset: int,
        *,
        check_crcs: bool = True,
        isolation_level: str = "read_uncommitted",
        aborted_transactions: Iterable[tuple[int, int]] | None = None,
        include_headers: bool = False,
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
    ) -> None: ...
    def take_records(self, max_records: int) -> list[ConsumerRecord]: ...
    def take_arrow(self, max_records: int) -> pa.RecordBatch: ...
    def take_arrow_split(
        self, max_records: int, parts: int,
        run: Callable[[list[Callable[[], pa.RecordBatch]]],
                      list[tuple[pa.RecordBatch | None, BaseException | None]]],
        min_bytes: int = 0,
    ) -> list[pa.RecordBatch] | None: ...
    def set_include_headers(self, include_headers: bool) -> None: ...
    @property
    def next_fetch_offset(self) -> int: ...
    @property
    def is_drained(self) -> bool: ...
    @property
    def incomplete_batch(self) -> tuple[int, int, int] | None: ...
    @property
    def last_epoch(self) -> int | None: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    def discard(self) -> None: ...

def decode_records(
    record_set: _Buffer | None,
    topic: str,
    partition: int,
    *,
    check_crcs: bool = True,
    fetch_offset: int = 0,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
    key_deserializer: Callable[[bytes | None], Any] | None = None,
    value_deserializer: Callable[[bytes | None], Any] | None = None,
) -> list[ConsumerRecord]: ...
def decode_arrow(
    record_set: _Buffer | None,
    topic: str,
    partition: int,
    *,
    check_crcs: bool = True,
    include_headers: bool = False,
    fetch_offset: int = 0,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
) -> pa.RecordBatch: ...
def kafka_arrow_schema(include_headers: bool = False) -> pa.Schema: ...
def set_max_decompressed_size(nbytes: int) -> None: ...
def set_buffer_cache_limit(nbytes: int) -> None: ...
def get_buffer_cache_limit() -> int: ...
def native_memory() -> tuple[int, int]: ...
def reset_native_peak() -> None: ...
def get_max_decompressed_size() -> int: ...
def _set_error_classes(
    corrupt_record: type[Exception],
    unsupported_codec: type[Exception],
    record_deserialization: type[Exception],
) -> None: ...
def _set_v2_fast_path(enabled: bool) -> None: ...
