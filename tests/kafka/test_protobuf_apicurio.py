"""Protobuf schemas as a real registry (Apicurio, Confluent's API at /apis/ccompat/v7) serves them.

What confluent-kafka's ProtobufSerializer registers is a base64 FileDescriptorProto, and Apicurio
gives it back as it was stored (``?format=serialized`` is not served: HTTP 500); a schema
registered as .proto text comes back as text. Both are read into the message's descriptors, and
Confluent-framed values decode into the rows the protobuf runtime parses.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")
pytest.importorskip("confluent_kafka.schema_registry.protobuf")

from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from pyconsumer.values import TypedValues  # noqa: E402
from pyconsumer.values.protobuf import schema_from_file  # noqa: E402
from pyconsumer.values.registry import SchemaRegistryClient  # noqa: E402
from tests.unit.protobuf_oracle import expected, message_class  # noqa: E402
from tests.unit.test_protobuf_format import PROTO, orders  # noqa: E402
from tests.unit.test_values_typed import batch  # noqa: E402


def test_schemas_from_apicurio_as_serializer_and_as_text(apicurio: Any, tmp_path: Path) -> None:
    (tmp_path / "shop.proto").write_text(PROTO)
    import grpc_tools
    wkt = Path(grpc_tools.__file__).parent / "_proto"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"-I{wkt}",
                    "--include_imports", f"--descriptor_set_out={tmp_path / 'shop.pb'}",
                    "shop.proto"], check=True, cwd=tmp_path)
    Order = message_class(schema_from_file(str(tmp_path / "shop.pb")).message("shop.Order"))
    ser = ProtobufSerializer(Order, ConfluentClient({"url": apicurio.url}),
                             {"use.deprecated.format": False})
    msgs = orders({"Order": Order})
    values = [ser(m, SerializationContext("pbq", MessageField.VALUE)) for m in msgs]
    sid = int.from_bytes(values[0][1:5], "big")
    with urllib.request.urlopen(f"{apicurio.url}/schemas/ids/{sid}") as answer:
        served = json.loads(answer.read())
    assert served["schemaType"] == "PROTOBUF" and " " not in served["schema"]   # base64, as stored

    client = SchemaRegistryClient(apicurio.url)
    plan = TypedValues.from_settings({"value.format": "protobuf"}, registry=client)
    assert plan is not None
    out = plan.apply(batch([(i, None, v, []) for i, v in enumerate(values)], topic="pbq"))
    assert out.column("value").to_pylist() == [expected(Order.FromString(v[6:])) for v in values]
    assert out.column("_corrupt_record").to_pylist() == [None] * len(values)

    # the same schema registered as .proto text: compiled with protoc, the same rows
    tid = client.register("pbt-value", PROTO, "PROTOBUF")
    with urllib.request.urlopen(f"{apicurio.url}/schemas/ids/{tid}") as answer:
        assert "message Order" in json.loads(answer.read())["schema"]
    text_values = [b"\x00" + tid.to_bytes(4, "big") + v[5:] for v in values]
    out = TypedValues.from_settings({"value.format": "protobuf"}, registry=client).apply(  # type: ignore[union-attr]
        batch([(i, None, v, []) for i, v in enumerate(text_values)], topic="pbt"))
    assert out.column("value").to_pylist() == [expected(Order.FromString(v[6:])) for v in values]
