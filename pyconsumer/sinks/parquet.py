"""A Parquet table sink: a plain Parquet dataset any reader takes, written exactly once through a small commit log.

The table at ``location`` (a local or mounted path)::

    _pyconsumer_log/00000000000000000000.json   version 0, written at creation: the schema and the partitioning
    _pyconsumer_log/00000000000000000001.json   one file per commit: its data files and the offsets reached
    _pyconsumer_staging/<id>/...                what one ``write`` made, not committed (yet)
    topic=orders/part-<uuid>.parquet            committed data files, in Hive folders when partitioned

Plain readers (``spark.read.parquet``, ``pyarrow.parquet.read_table``, ``pyarrow.dataset``) skip paths
whose names start with ``_`` or ``.``: they read committed files and never a staged one. The layout is
Hive's, as Spark's own writer and the Delta sink make it: a partition column (``topic``, or
``timestamp_date`` for day(timestamp)) is in the folder names only, not in the files, so readers that
discover Hive partitions (Spark; pyarrow's ``read_table``, or ``dataset(..., partitioning="hive")``) add
it, with the type they infer from the names (``read_parquet_table`` gives the exact types). A column in
both would make pyarrow refuse the folder (its inferred type never merges with the file's).

A commit:

1. the staged files are checked to be there and touched (no cleaner takes them for stale);
2. the newest log entry N is read and its files moved out of staging where its writer died before it
   did (see the invariant below); its offsets for this app id decide, by ``should_commit``: a rerun of
   what the table holds deletes the staged files and returns None, an overlap raises;
3. entry N+1 is written to a temporary file, then linked to its version's name: ``os.link`` fails when
   the name exists, a put-if-absent. Losing that race means another writer committed N+1: back to 2;
4. the files are renamed from staging to their final paths, and N+1 is returned.

Invariant: a writer links N+1 only after N's files are out of staging, so only the newest entry can
have files left there. Opening the sink (the constructor, ``resume_offsets``) and the readers
(:func:`committed_files`, :func:`read_parquet_table`) complete it; opening also removes staging folders
nothing touched for ``stale_staging_seconds`` (a day by default): files of runs that died before their
commit. A run whose tasks finish longer than that before its commit finds its files gone, and its
commit fails before writing anything.

An entry holds the offsets after it of every app id that wrote the table (cumulative), so resuming reads
the newest entry alone.

Limits: the renames of step 4 are not atomic together, so during them (milliseconds) or, after a crash
between steps 3 and 4, until the next open, a plain reader sees part of a commit; ``read_parquet_table``
never does. The data files are not fsynced (a kill -9 loses nothing, a power cut may). Object stores have
no put-if-absent that pyarrow offers, so the location is a local or mounted file system: use the Delta or
Iceberg sink for object stores.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from pyconsumer.sinks.base import (
    DEFAULT_TARGET_FILE_SIZE,
    DataFile,
    LocationError,
    SchemaConflictError,
    SinkError,
    TopicPartitionKey,
)
from pyconsumer.sinks.files import FileRoller, check_writable, delete_files, resolve
from pyconsumer.sinks.offsets import should_commit
from pyconsumer.sinks.partitioning import (
    PartitionBy,
    checked_partitioning,
    hive_directory,
    hive_schema,
    hive_split,
)
from pyconsumer.sinks.schema import check_batch_schema

__all__ = ["LOG_DIR", "STAGING_DIR", "ParquetSink", "committed_files", "read_parquet_table"]

LOG_DIR = "_pyconsumer_log"
STAGING_DIR = "_pyconsumer_staging"
LOG_FORMAT = "pyconsumer-parquet-log"
LOG_FORMAT_VERSION = 1
STALE_STAGING_SECONDS = 24 * 3600.0

_ENTRY_NAME = re.compile(r"^(\d{20})\.json$")
_logger = logging.getLogger(__name__)

Entry = dict[str, Any]


class ParquetSink:
    """A Parquet table at location (a local or mounted path), created when missing with schema and its partitioning.

    Holds settings only, so that it pickles into Spark tasks; every call reads the log afresh.
    """

    commit_noun = "log version"
    format_name = "Parquet"

    def __init__(
        self,
        location: str,
        schema: pa.Schema,
        *,
        app_id: str = "pyconsumer",
        partition_by: Sequence[str | PartitionBy] = (),
        target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        max_commit_attempts: int = 20,
        stale_staging_seconds: float = STALE_STAGING_SECONDS,
    ) -> None:
        self.location = location
        self.schema = schema
        self.app_id = app_id
        self.target_file_size = target_file_size
        self.max_commit_attempts = max_commit_attempts
        self.stale_staging_seconds = stale_staging_seconds
        self.partition_by = checked_partitioning(partition_by, schema)
        self.table_schema = hive_schema(schema, self.partition_by)
        """The table's columns: the batches' and the partitioning's own (those in folder names only)."""
        self._fs, self._root = local_root(location)
        check_writable(self._fs, self._root, location)
        self._log = _Log(self._root, location)
        self._open_or_create()
        self._recover()

    def _open_or_create(self) -> None:
        if not self._log.versions():
            self._refuse_foreign_files()
            self._log.put_if_absent(0, self._creation())     # False: another writer created it first
        first = self._log.read(0)
        check_batch_schema(table_schema_of(first, self.location), self.schema, self.location,
                           got_name="the sink's schema")
        have = [(tuple(p["source"]), p["transform"]) for p in first["partition_by"]]
        if have != [(p.source, p.transform) for p in self.partition_by]:
            held = [p["name"] for p in first["partition_by"]]
            mine = [p.name for p in self.partition_by]
            raise SchemaConflictError(
                f"the Parquet table at {self.location} is partitioned by {held or 'nothing'}, "
                f"the sink by {mine or 'nothing'}"
            )

    def _refuse_foreign_files(self) -> None:
        # files a table without a log holds are not in any commit: plain readers would read them
        # beside the table's, and this sink would never know them
        found = sorted(n for n in os.listdir(self._root) if not n.startswith(".") and n not in (LOG_DIR, STAGING_DIR))
        if found:
            shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
            raise SinkError(
                f"{self.location} holds {shown} but no commit log ({LOG_DIR}/): it is not a Parquet table "
                "this sink made (a dataset written without a table format?); give a new or empty folder"
            )

    def _creation(self) -> Entry:
        return {
            **_header(0, self.app_id, "create"),
            "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode("ascii"),
            "schema_text": self.schema.to_string(show_schema_metadata=False),
            "partition_by": [
                {"name": p.name, "source": list(p.source), "transform": p.transform} for p in self.partition_by
            ],
            "files": [],
            "offsets": {},
        }

    def _recover(self) -> Entry:
        """The newest entry, its files out of staging; staging folders untouched for the stale age removed."""
        version, entry = self._log.head()
        roll_forward(self._root, version, entry, self.location)
        remove_stale_staging(self._root, self.stale_staging_seconds, keep=_staging_ids(entry))
        return entry

    def resume_offsets(self) -> dict[TopicPartitionKey, int]:
        return _app_offsets(self._recover(), self.app_id)

    def write(self, batches: Iterable[pa.RecordBatch]) -> list[DataFile]:
        staging = f"{STAGING_DIR}/{uuid.uuid4().hex}"

        def directory(partition: tuple[tuple[str, Any], ...]) -> str:
            folder = hive_directory(partition)
            return f"{staging}/{folder}" if folder else staging

        partition_columns = [p.name for p in self.partition_by]
        file_schema = pa.schema([f for f in self.table_schema if f.name not in partition_columns])
        roller = FileRoller(self._fs, self._root, file_schema, self.target_file_size, directory=directory,
                            drop=partition_columns)
        try:
            for batch in batches:
                check_batch_schema(self.schema, batch.schema, self.location)
                for partition, rows in hive_split(batch, self.partition_by):
                    roller.add(partition, rows)
            return roller.finish()
        except BaseException:
            roller.abort()
            _remove_empty_folders(os.path.join(self._root, staging))
            raise

    def commit(self, files: Sequence[DataFile], offsets: Mapping[TopicPartitionKey, int]) -> int | None:
        described = [_describe(f) for f in files]
        self._touch(files)
        for attempt in range(self.max_commit_attempts):
            version, head = self._log.head()
            # only the newest entry can have files in staging: out with them before the next one
            roll_forward(self._root, version, head, self.location)
            # the offsets are read again on every attempt: a concurrent writer may have committed them
            held = _app_offsets(head, self.app_id)
            if not should_commit(held, offsets, files):
                delete_files(self._fs, [os.path.join(self._root, f.path) for f in files])
                _remove_staging(self._root, {d["staged"].split("/")[1] for d in described})
                return None
            entry = {
                **_header(version + 1, self.app_id, "append"),
                "files": described,
                "offsets": {**head["offsets"], self.app_id: _offsets_json({**held, **offsets})},
            }
            if self._log.put_if_absent(version + 1, entry):
                try:
                    roll_forward(self._root, version + 1, entry, self.location)
                except (OSError, SinkError) as e:
                    # committed all the same: the next open of the table, or its readers, move them
                    _logger.warning("%s: log version %d is committed but its files are still staged: %s",
                                    self.location, version + 1, e)
                return version + 1
            time.sleep(min(0.2, 0.002 * 2**attempt))
        raise SinkError(
            f"could not commit to the Parquet table at {self.location} after {self.max_commit_attempts} "
            "attempts (concurrent writers took every log version it tried)"
        )

    def _touch(self, files: Sequence[DataFile]) -> None:
        """Each staged file still there, and fresh again for the stale-staging cleaner."""
        now = time.time()
        for f in files:
            try:
                os.utime(os.path.join(self._root, f.path), (now, now))
            except FileNotFoundError:
                raise SinkError(
                    f"{f.path} is gone from the Parquet table at {self.location}: staged files nothing "
                    f"touched for {self.stale_staging_seconds:g} s are removed; nothing was committed"
                ) from None


# --------------------------------------------------------------------------- the log


class _Log:
    """The commit log of the table at root: ``<20-digit version>.json`` files, each created only if absent."""

    def __init__(self, root: str, location: str) -> None:
        self.folder = os.path.join(root, LOG_DIR)
        self.location = location

    def path(self, version: int) -> str:
        return os.path.join(self.folder, f"{version:020d}.json")

    def versions(self) -> list[int]:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for m in map(_ENTRY_NAME.match, names) if m)

    def read(self, version: int) -> Entry:
        path = self.path(version)
        try:
            with open(path, "rb") as f:
                entry: Entry = json.loads(f.read())
        except FileNotFoundError:
            raise SinkError(f"the Parquet table at {self.location} has no log version {version} ({path})") from None
        except ValueError as e:
            raise SinkError(f"the Parquet table's log entry {path} is not JSON: {e}") from None
        if entry.get("format") != LOG_FORMAT or entry.get("format_version") != LOG_FORMAT_VERSION:
            raise SinkError(
                f"{path} is not a {LOG_FORMAT} entry of version {LOG_FORMAT_VERSION} "
                f"(format {entry.get('format')!r}, version {entry.get('format_version')!r})"
            )
        return entry

    def head(self) -> tuple[int, Entry]:
        versions = self.versions()
        if not versions:
            raise SinkError(f"{self.location} has no commit log ({LOG_DIR}/): it is not a Parquet table of this sink")
        return versions[-1], self.read(versions[-1])

    def put_if_absent(self, version: int, entry: Entry) -> bool:
        """Create the version's entry whole, unless it exists (False): another writer took that version."""
        os.makedirs(self.folder, exist_ok=True)
        final = self.path(version)
        temporary = os.path.join(self.folder, f".{version:020d}.{uuid.uuid4().hex}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(json.dumps(entry, indent=1).encode())
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(temporary, final)
            except FileExistsError:
                return False
            except OSError as e:
                raise SinkError(
                    f"cannot create the log entry {final}: {e}. A Parquet table's commits need a file system "
                    "with hard links (os.link creates an entry only if absent); use delta or iceberg there"
                ) from None
        finally:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
        _fsync_folder(self.folder)
        return True


def _header(version: int, app_id: str, operation: str) -> Entry:
    return {
        "format": LOG_FORMAT,
        "format_version": LOG_FORMAT_VERSION,
        "version": version,
        "timestamp": int(time.time() * 1000),
        "app_id": app_id,
        "operation": operation,
    }


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return                      # Windows: folders do not open
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _describe(f: DataFile) -> dict[str, Any]:
    """A staged file as its log entry lists it: its final path, where it is staged, what it holds."""
    parts = f.path.split("/")
    if len(parts) < 3 or parts[0] != STAGING_DIR:
        raise SinkError(f"{f.path} was not written by this sink's write (its files are staged in {STAGING_DIR}/)")
    return {
        "path": "/".join(parts[2:]),
        "staged": f.path,
        "size": f.size,
        "rows": f.rows,
        "partition": [[name, value] for name, value in f.partition],
        "offsets": [{"topic": r.topic, "partition": r.partition, "first": r.first, "last": r.last} for r in f.offsets],
        "modification_time": f.modification_time,
    }


def _offsets_json(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), nxt in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = nxt
    return out


def _app_offsets(entry: Entry, app_id: str) -> dict[TopicPartitionKey, int]:
    held: dict[str, dict[str, int]] = entry["offsets"].get(app_id, {})
    return {(topic, int(p)): int(nxt) for topic, parts in held.items() for p, nxt in parts.items()}


def _staging_ids(entry: Entry) -> set[str]:
    return {f["staged"].split("/")[1] for f in entry["files"]}


def table_schema_of(first: Entry, location: str) -> pa.Schema:
    """The batches' schema the table was created with (its version 0)."""
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(first["schema"])))
    except (KeyError, ValueError, pa.ArrowException) as e:
        raise SinkError(f"the Parquet table at {location}: its log version 0 holds no readable schema ({e})") from None


# --------------------------------------------------------------------------- staging


def local_root(location: str) -> tuple[pafs.FileSystem, str]:
    """The local file system and the absolute path of a location: a path or a file:// URI."""
    scheme = location.partition("://")[0] if "://" in location else ""
    if scheme not in ("", "file"):
        raise LocationError(
            f"cannot use {location} for a Parquet table: its commit log needs a local or mounted path (each "
            f"log entry is created only if absent, which {scheme}:// does not offer here); use the delta or "
            "iceberg table format for object stores"
        )
    fs, root = resolve(location)
    if not isinstance(fs, pafs.LocalFileSystem):
        raise LocationError(f"cannot use {location} for a Parquet table: give a local or mounted path")
    return fs, root


def roll_forward(root: str, version: int, entry: Entry, location: str) -> None:
    """Every file of a committed entry at its final path: completes a commit whose writer died
    between its log entry and its renames (or is doing them now: both renames end the same)."""
    for f in entry["files"]:
        final = os.path.join(root, f["path"])
        if os.path.exists(final):
            continue
        os.makedirs(os.path.dirname(final), exist_ok=True)
        try:
            os.replace(os.path.join(root, f["staged"]), final)
        except FileNotFoundError:
            if not os.path.exists(final):
                raise SinkError(
                    f"the Parquet table at {location} lost {f['path']} of log version {version}: "
                    f"it is neither there nor staged at {f['staged']}"
                ) from None
    _remove_staging(root, _staging_ids(entry))


def _remove_staging(root: str, ids: Iterable[str]) -> None:
    for staging_id in ids:
        _remove_empty_folders(os.path.join(root, STAGING_DIR, staging_id))


def _remove_empty_folders(top: str) -> None:
    """The empty folders under top, and top when it ends empty (a folder still in use stays)."""
    for folder, _, _ in os.walk(top, topdown=False):
        try:
            os.rmdir(folder)
        except OSError:
            pass


def remove_stale_staging(root: str, max_age: float, keep: Iterable[str] = ()) -> list[str]:
    """Remove the staging folders of writes that nothing changed for max_age seconds (their runs died
    before committing them); those in keep stay. The ids removed."""
    staging = os.path.join(root, STAGING_DIR)
    try:
        names = os.listdir(staging)
    except FileNotFoundError:
        return []
    kept = set(keep)
    now = time.time()
    removed = []
    for name in sorted(names):
        newest = _last_change(os.path.join(staging, name))
        if name in kept or newest is None or now - newest < max_age:
            continue
        shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
        removed.append(name)
    return removed


def _last_change(top: str) -> float | None:
    """The newest modification time of top and of everything under it (None: gone meanwhile)."""
    try:
        newest = os.lstat(top).st_mtime
    except FileNotFoundError:
        return None
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            try:
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
            except FileNotFoundError:
                continue
    return newest


# --------------------------------------------------------------------------- readers


def committed_files(location: str) -> list[str]:
    """The data files the Parquet table at location holds (absolute paths, in commit order).

    A commit whose writer died before moving its files out of staging is completed first (where the
    caller may write there; else its files are listed where they are staged).
    """
    return [path for path, _ in _committed(location)]


def _committed(location: str) -> list[tuple[str, list[list[Any]]]]:
    """Each committed file's absolute path and its partition values (as the log lists them)."""
    _, root = local_root(location)
    log = _Log(root, location)
    versions = log.versions()
    if not versions:
        raise SinkError(f"{location} has no commit log ({LOG_DIR}/): it is not a Parquet table of this sink")
    entries = [log.read(v) for v in versions]
    try:
        roll_forward(root, versions[-1], entries[-1], location)
    except OSError:
        pass                        # read-only: the staged paths are read below
    out = []
    for version, entry in zip(versions, entries):
        for f in entry["files"]:
            # final, staged, final again: a concurrent roll-forward may move it between the two looks
            found = next((p for p in (f["path"], f["staged"], f["path"]) if os.path.exists(os.path.join(root, p))),
                         None)
            if found is None:
                raise SinkError(
                    f"the Parquet table at {location} lost {f['path']} of log version {version}: "
                    f"it is neither there nor staged at {f['staged']}"
                )
            out.append((os.path.join(root, found), f["partition"]))
    return out


def read_parquet_table(location: str) -> pa.Table:
    """Exactly the rows the Parquet table at location committed, in its columns (the batches' and the
    partitioning's own); files staged or orphaned are never read."""
    _, root = local_root(location)
    log = _Log(root, location)
    first = log.read(0)
    partition_by = [PartitionBy(tuple(p["source"]), p["transform"]) for p in first["partition_by"]]
    schema = hive_schema(table_schema_of(first, location), partition_by)
    in_files = pa.schema([f for f in schema if f.name not in {p.name for p in partition_by}])
    tables = []
    for path, partition in _committed(location):
        data = ds.dataset(path, schema=in_files, format="parquet").to_table()
        for name, text in partition:
            # the value as the folder names it, in the column's own type
            value = pa.array([text], pa.string()).cast(schema.field(name).type)[0]
            data = data.append_column(name, pa.repeat(value, data.num_rows))
        tables.append(data.select(schema.names).cast(schema))
    return pa.concat_tables(tables) if tables else schema.empty_table()
