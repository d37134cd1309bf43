"""Protobuf schemas for tests: ``.proto`` text compiled by protoc, and message classes made from it.

- :func:`compile_protos`: ``.proto`` files given as text (by their import path) compiled by
  grpcio-tools' protoc into a ``FileDescriptorSet`` holding every file and its imports (the
  well-known types too): what Spark's ``from_protobuf`` and a descriptor-file option take.
- :func:`message_classes`: every message of such a set (nested ones too) as a class of the
  ``protobuf`` runtime, by full name, made at run time in a pool of their own (no generated
  code): what confluent-kafka's ProtobufSerializer writes and the runtime's parse reads back.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyconsumer._install import install_hint

from ._errors import MissingExtraError

__all__ = ["ProtocError", "compile_protos", "message_classes"]


class ProtocError(ValueError):
    """protoc refused the ``.proto`` text (its own message says which file, line and column)."""


def _require(module: str, user: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        raise MissingExtraError(f"{user}() needs {missing.name or module} (grpcio-tools and "
                                f"protobuf): {install_hint('test')}") from None


def compile_protos(sources: Mapping[str, str], *, out: Path | None = None) -> bytes:
    """The serialized ``FileDescriptorSet`` of ``sources`` (import path -> ``.proto`` text, e.g.
    ``{"shop/order.proto": "syntax = ..."}``) with all their imports, compiled by protoc;
    ``google/protobuf/*.proto`` are found in grpcio-tools. Also written to ``out`` when given.
    Raises ProtocError with protoc's message when the text does not compile."""
    grpc_tools = _require("grpc_tools", "compile_protos")
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    if not sources:
        raise ValueError("compile_protos needs at least one .proto file")
    with tempfile.TemporaryDirectory(prefix="pyconsumer-protoc-") as work:
        root = Path(work) / "src"
        for name, text in sources.items():
            if Path(name).is_absolute() or ".." in Path(name).parts:
                raise ValueError(f"a .proto import path is relative and stays below its root, not {name!r}")
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        target = Path(work) / "set.desc"
        # a child process: protoc's messages go to its stderr, which is kept for the error
        run = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"-I{well_known}",
             "--include_imports", f"--descriptor_set_out={target}", *sources],
            capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            message = (run.stderr or run.stdout).strip().replace(str(root) + "/", "")
            raise ProtocError(f"protoc could not compile {', '.join(sources)}: {message}")
        compiled = target.read_bytes()
    if out is not None:
        out.write_bytes(compiled)
    return compiled


def message_classes(descriptor_set: bytes) -> dict[str, Any]:
    """Every message type of a serialized ``FileDescriptorSet`` (top-level and nested, map
    entries left out) as a runtime class, by full name (``shop.Order``, ``shop.Order.Line``).
    The classes live in a descriptor pool of their own, so sets made by different tests never
    clash."""
    descriptor_pb2 = _require("google.protobuf.descriptor_pb2", "message_classes")
    descriptor_pool = _require("google.protobuf.descriptor_pool", "message_classes")
    message_factory = _require("google.protobuf.message_factory", "message_classes")
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file
    pool = descriptor_pool.DescriptorPool()
    for proto in files:
        pool.Add(proto)
    out: dict[str, Any] = {}

    def add(descriptor: Any) -> None:
        if descriptor.GetOptions().map_entry:
            return
        out[descriptor.full_name] = message_factory.GetMessageClass(descriptor)
        for nested in descriptor.nested_types:
            add(nested)

    for proto in files:
        for message in pool.FindFileByName(proto.name).message_types_by_name.values():
            add(message)
    return out
