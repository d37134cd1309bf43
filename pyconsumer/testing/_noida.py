"""noida-db (a single-binary server that also speaks Kafka) as an out-of-process test broker.

The binary ships in the ``noida-db`` wheel (``noida_db/noida-db``). Only its Kafka service is
started. It is the one offline broker here whose ListOffsets by timestamp is right (Tansu
answers 0, librdkafka's mock -1), so it backs the timestamp tests; it also keeps commit
metadata. Its data lives in ``<data dir>/kafka.json``, written behind: a temporary data dir
is made for each broker unless one is given, and removed by :meth:`NoidaBroker.stop`.
Unlike Tansu it enforces ``retention.ms`` on record timestamps, so :meth:`create_topic` makes
topics that keep everything unless told otherwise.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ._errors import require_spec
from ._process import BrokerProcess, BrokerStartError

__all__ = ["NoidaBroker", "find_noida_binary"]


def find_noida_binary() -> Path:
    """Path of the ``noida-db`` executable inside the installed noida-db package."""
    spec = require_spec("NoidaBroker", "noida_db")
    if not spec.submodule_search_locations:
        raise BrokerStartError(f"noida_db is not a package: {spec.origin}")
    name = "noida-db.exe" if os.name == "nt" else "noida-db"
    for location in spec.submodule_search_locations:
        candidate = Path(location) / name
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):
                # the wheel's own launcher (noida_db.cli) sets the bit the same way
                try:
                    candidate.chmod(0o755)
                except OSError as exc:
                    raise BrokerStartError(
                        f"noida-db binary is not executable: {candidate} ({exc})") from None
            return candidate
    raise BrokerStartError(
        f"noida-db binary not found in noida_db at {list(spec.submodule_search_locations)}"
    )


class NoidaBroker(BrokerProcess):
    """One noida-db process on 127.0.0.1 serving only Kafka.

    >>> with NoidaBroker() as broker:
    ...     broker.create_topic("t", partitions=3)
    ...     broker.bootstrap  # "127.0.0.1:PORT"

    ``data_dir``: where noida keeps its data; by default a fresh temporary directory, made
    at start and removed by :meth:`stop`. A given directory is never removed.
    :meth:`restart` keeps the port and the data.
    """

    _name = "noida-db"
    _log_prefix = "noida"
    _port_in_use_marker = "already in use"

    def __init__(
        self,
        port: int | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 20.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self._temp_data_dir: Path | None = None
        super().__init__(port, binary=find_noida_binary(), start_timeout=start_timeout, stop_timeout=stop_timeout)

    @property
    def data_dir(self) -> Path | None:
        """The data directory in use (None before the first start of a temporary one)."""
        return self._given_data_dir or self._temp_data_dir

    def _command(self) -> list[str]:
        data_dir = self.data_dir
        if data_dir is None:
            data_dir = self._temp_data_dir = Path(tempfile.mkdtemp(prefix="noida-data-"))
        data_dir.mkdir(parents=True, exist_ok=True)
        return [
            str(self.binary), "start",
            "--only", "kafka",
            "--host", self.host,
            "--kafka-port", str(self.port),
            "--data-dir", str(data_dir),
        ]

    def _ready_in_log(self, text: bytes) -> bool:
        # noida prints "kafka <host>:<port>" once it listens
        return any(line.split() == [b"kafka", self.bootstrap.encode()] for line in text.splitlines())

    def _after_stop(self) -> None:
        temp, self._temp_data_dir = self._temp_data_dir, None
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def stop(self) -> None:
        """Stop the process; a temporary data directory is removed with all its data."""
        super().stop()

    def restart(self) -> NoidaBroker:
        """Stop and start again on the same port with the same data. noida writes behind:
        what was acknowledged just before the stop may be lost."""
        return super().restart()

    def _repr_extra(self) -> str:
        return f"data={self.data_dir}, "

    def create_topic(self, name: str, partitions: int = 1, *, config: dict[str, str] | None = None,
                     timeout: float = 15.0) -> str:
        """Create a topic with confluent-kafka's AdminClient; wait until metadata shows it.

        ``retention.ms`` is -1 (keep forever) unless ``config`` says otherwise: noida applies
        the 7-day default to record timestamps about a second after they are written, even
        in the active segment, so records with old explicit timestamps (sample_records'
        are from 2023) would vanish under a test."""
        return super().create_topic(name, partitions, config={"retention.ms": "-1", **(config or {})},
                                    timeout=timeout)
