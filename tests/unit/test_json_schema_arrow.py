"""JSON Schema documents as Arrow schemas (pyconsumer.values.json_schema): each rule of the
mapping, references, and the refusals naming where in the document."""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer.values.json_schema import JsonSchemaError, json_schema_to_arrow
from pyconsumer.values.schema import TIMESTAMP


def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], **extra}


def test_scalars_formats_and_nullability_from_required_and_null_types() -> None:
    doc = obj({
        "id": {"type": "integer"},
        "amount": {"type": "number"},
        "active": {"type": "boolean"},
        "user": {"type": "string"},
        "ts": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "email": {"type": "string", "format": "email"},
        "note": {"type": ["string", "null"]},
        "qty": {"type": ["integer", "number"]},
    }, required=["id", "user", "ts", "note"])
    assert json_schema_to_arrow(json.dumps(doc)) == pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("amount", pa.float64()),
        pa.field("active", pa.bool_()),
        pa.field("user", pa.string(), nullable=False),
        pa.field("ts", TIMESTAMP, nullable=False),
        pa.field("day", pa.date32()),
        pa.field("email", pa.string()),
        pa.field("note", pa.string()),              # required, but may be null
        pa.field("qty", pa.float64()),
    ])


def test_nested_objects_arrays_and_maps() -> None:
    doc = obj({
        "address": obj({"city": {"type": "string"}, "zip": {"type": "integer"}}, ["city"]),
        "tags": {"type": "array", "items": {"type": "string"}},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "anything": {"type": "array"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "labels": {"type": "object"},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]},
        "lines": {"type": "array", "items": obj({"sku": {"type": "string"}})},
    })
    assert json_schema_to_arrow(doc) == pa.schema([
        pa.field("address", pa.struct([pa.field("city", pa.string(), nullable=False),
                                       pa.field("zip", pa.int64())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("matrix", pa.list_(pa.list_(pa.float64()))),
        pa.field("anything", pa.list_(pa.string())),
        pa.field("counts", pa.map_(pa.string(), pa.int64())),
        pa.field("labels", pa.map_(pa.string(), pa.string())),
        pa.field("pair", pa.list_(pa.int64())),
        pa.field("lines", pa.list_(pa.struct([pa.field("sku", pa.string())]))),
    ])


def test_unions_enums_consts_and_untyped_schemas() -> None:
    doc = obj({
        "a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "b": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "c": {"enum": ["red", "green"]},
        "d": {"const": 3},
        "e": {"enum": ["x", None]},
        "f": {},
        "g": True,
        "h": {"description": "free-form"},
        "i": {"allOf": [{"type": "boolean"}]},
        "j": {"type": "null"},
    }, required=["a", "b", "c", "d", "e", "f", "i"])
    assert json_schema_to_arrow(doc) == pa.schema([
        pa.field("a", pa.string()),
        pa.field("b", pa.float64(), nullable=False),
        pa.field("c", pa.string(), nullable=False),
        pa.field("d", pa.int64(), nullable=False),
        pa.field("e", pa.string()),
        pa.field("f", pa.string()),                 # anything: its JSON text
        pa.field("g", pa.string()),
        pa.field("h", pa.string()),
        pa.field("i", pa.bool_(), nullable=False),
        pa.field("j", pa.string()),
    ])


def test_references_within_the_document_and_to_registered_references() -> None:
    doc = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"Money": obj({"units": {"type": "integer"}, "currency": {"type": "string"}},
                                     ["units"])},
        "$defs": {"Id": {"type": "string"}},
        "properties": {
            "price": {"$ref": "#/definitions/Money"},
            "id": {"$ref": "#/$defs/Id"},
            "customer": {"$ref": "customer.json"},
            "country": {"$ref": "customer.json#/definitions/Country"},
        },
        "required": ["id"],
    }
    customer = obj({"name": {"type": "string"}, "home": {"$ref": "#/definitions/Country"}},
                   definitions={"Country": {"type": "string", "enum": ["FR", "DE"]}})
    money = pa.struct([pa.field("units", pa.int64(), nullable=False), pa.field("currency", pa.string())])
    assert json_schema_to_arrow(doc, {"customer.json": json.dumps(customer)}) == pa.schema([
        pa.field("price", money),
        pa.field("id", pa.string(), nullable=False),
        pa.field("customer", pa.struct([pa.field("name", pa.string()), pa.field("home", pa.string())])),
        pa.field("country", pa.string()),
    ])
    # the root itself may be a reference
    assert json_schema_to_arrow({"$ref": "#/definitions/Money", "definitions": doc["definitions"]}) == \
        pa.schema(list(money))


@pytest.mark.parametrize("doc, message", [
    ({"type": "string"}, "the JSON Schema's root must be an object (type: object with properties), not "
                         "type 'string': a value decodes into columns"),
    (obj({"a": {"type": ["string", "integer"]}}), "#/properties/a/type: a value of string or integer has "
                                                  "no one Arrow type (give the value's schema as Spark DDL)"),
    (obj({"a": {"oneOf": [{"type": "string"}, obj({"x": {"type": "integer"}})]}}),
     "#/properties/a/oneOf: members of different types (string, struct<x: int64>) have no one Arrow type "
     "(give the value's schema as Spark DDL)"),
    (obj({"a": {"type": "strnig"}}), "#/properties/a/type: \"strnig\" is not a JSON Schema type (one of "
                                     "object, array, string, integer, number, boolean, null, or a list of them)"),
    (obj({"a": {"$ref": "#/definitions/Missing"}}), "#/properties/a: $ref '#/definitions/Missing' points at "
                                                   "nothing in the document"),
    (obj({"a": {"$ref": "other.json"}}), "#/properties/a: $ref 'other.json' names 'other.json', which is not "
                                         "one of the schema's references (none)"),
    ({"type": "object", "definitions": {"Node": obj({"next": {"$ref": "#/definitions/Node"}})},
      "properties": {"head": {"$ref": "#/definitions/Node"}}},
     "#/properties/head/$ref/properties/next: $ref '#/definitions/Node' is recursive: a recursive JSON "
     "Schema has no Arrow type (give the value's schema as Spark DDL)"),
    (obj({"a": {"allOf": [{"type": "string"}, {"minLength": 2}]}}),
     "#/properties/a/allOf: only an allOf of one schema has an Arrow type (give the value's schema as Spark DDL)"),
    (obj({"a": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}),
     "#/properties/a/items: members of different types have no one Arrow element type (give the value's "
     "schema as Spark DDL)"),
    (obj({"a/b": {"type": "array", "items": 3}}), "#/properties/a~1b/items: a schema must be an object or "
                                                  "true, not 3"),
    ("{not json", "the JSON Schema is not JSON: Expecting property name enclosed in double quotes: line 1 "
                  "column 2 (char 1)"),
])
def test_what_has_no_arrow_type_is_refused_naming_where(doc: Any, message: str) -> None:
    with pytest.raises(JsonSchemaError) as e:
        json_schema_to_arrow(doc)
    assert str(e.value) == message
