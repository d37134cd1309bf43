"""A JSON Schema document (a Schema Registry subject's ``JSON`` schema, as confluent-kafka's
JSONSerializer registers it) as the Arrow schema its values decode into.

The mapping, as Spark's types would hold the same values:

* ``object`` with ``properties``: a struct, fields in the document's order; a field is nullable
  unless ``required`` lists it and its own type does not allow ``null``. An object with only
  ``additionalProperties`` (a schema): a map from string; with neither: a map of strings.
* ``array``: a list of its ``items`` (a list of JSON texts without them; a tuple form or
  ``prefixItems`` whose members agree, of that type).
* ``integer`` int64, ``number`` float64 (a union of the two too), ``boolean`` bool, ``string``
  string, with ``format``: ``date-time`` a timestamp (microseconds, UTC, as the DDL's TIMESTAMP),
  ``date`` a date. A schema that allows anything (``{}``, ``true``) is the value's JSON text.
* ``type`` lists, ``anyOf`` and ``oneOf``: ``null`` members make the field nullable; the rest
  must be one type (or integer and number). ``allOf`` of one member is that member; ``enum`` and
  ``const`` take their values' type.
* ``$ref``: within the document (``#/definitions/X``, ``#/$defs/X``, any JSON pointer) or to a
  reference's document by its registered name (``other.json``, ``other.json#/definitions/X``).
  A recursive reference has no Arrow type and is refused.

Anything else is refused with :class:`JsonSchemaError` naming the place in the document (a JSON
pointer) and what to do (give the schema as Spark DDL instead).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.schema import TIMESTAMP

__all__ = ["JsonSchemaError", "json_schema_to_arrow"]

_SCALARS: dict[str, pa.DataType] = {
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
_FORMATS: dict[str, pa.DataType] = {"date-time": TIMESTAMP, "date": pa.date32()}
_JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")


class JsonSchemaError(ConfigurationError):
    """A JSON Schema that has no Arrow type, naming where in the document and why."""


def _text_of(document: str | bytes | Mapping[str, Any] | bool, what: str) -> Any:
    if isinstance(document, (str, bytes)):
        try:
            return json.loads(document)
        except ValueError as e:
            raise JsonSchemaError(f"{what} is not JSON: {e}") from None
    return document


def json_schema_to_arrow(document: str | bytes | Mapping[str, Any],
                         references: Mapping[str, str | bytes | Mapping[str, Any]] | None = None
                         ) -> pa.Schema:
    """The Arrow schema (one field per property of the root object) of ``document``, with
    ``references`` the documents it may ``$ref`` by their registered names."""
    root = _text_of(document, "the JSON Schema")
    docs = {name: _text_of(text, f"the referenced JSON Schema {name!r}")
            for name, text in (references or {}).items()}
    data_type, _ = _Mapper(root, docs).type_of(root, "#", ())
    if not pa.types.is_struct(data_type):
        raise JsonSchemaError(f"the JSON Schema's root must be an object (type: object with "
                              f"properties), not {_describe(root)}: a value decodes into columns")
    return pa.schema(list(data_type))


def _describe(node: Any) -> str:
    if isinstance(node, Mapping) and "type" in node:
        return f"type {node['type']!r}"
    return json.dumps(node)[:80]


class _Mapper:
    def __init__(self, root: Any, documents: Mapping[str, Any]) -> None:
        self.root = root
        self.documents = documents

    # --- references

    def resolve(self, ref: str, where: str, doc: Any) -> tuple[Any, Any]:
        """The node ``ref`` (in ``doc``) points at, and the document it is in."""
        name, _, pointer = ref.partition("#")
        if name:
            if name not in self.documents:
                raise JsonSchemaError(f"{where}: $ref {ref!r} names {name!r}, which is not one of "
                                      f"the schema's references ({', '.join(self.documents) or 'none'})")
            doc = self.documents[name]
        node = doc
        for part in [p for p in pointer.split("/") if p] if pointer else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise JsonSchemaError(f"{where}: $ref {ref!r} points at nothing in the document")
        return node, doc

    # --- types

    def type_of(self, node: Any, where: str, seen: tuple[str, ...], doc: Any = None
                ) -> tuple[pa.DataType, bool]:
        """(the Arrow type of ``node``, whether it allows null); ``doc``: the document it is in."""
        doc = self.root if doc is None else doc
        if node is True or node == {}:
            return pa.string(), True               # anything: the value's JSON text
        if not isinstance(node, Mapping):
            raise JsonSchemaError(f"{where}: a schema must be an object or true, not {json.dumps(node)[:60]}")
        if "$ref" in node:
            ref = node["$ref"]
            key = f"{id(doc)}:{ref}"
            if key in seen:
                raise JsonSchemaError(f"{where}: $ref {ref!r} is recursive: a recursive JSON Schema "
                                      "has no Arrow type (give the value's schema as Spark DDL)")
            target, target_doc = self.resolve(ref, where, doc)
            return self.type_of(target, f"{where}/$ref", (*seen, key), target_doc)
        for keyword in ("anyOf", "oneOf"):
            if keyword in node:
                return self.union(node[keyword], f"{where}/{keyword}", seen, doc)
        if "allOf" in node:
            members = node["allOf"]
            if not isinstance(members, list) or len(members) != 1:
                raise JsonSchemaError(f"{where}/allOf: only an allOf of one schema has an Arrow "
                                      "type (give the value's schema as Spark DDL)")
            return self.type_of(members[0], f"{where}/allOf/0", seen, doc)
        types = node.get("type")
        if types is None:
            types = _implied_type(node)
            if types is None:
                return pa.string(), True           # no type: anything, as its JSON text
        names = [types] if isinstance(types, str) else types
        if not isinstance(names, list) or not names or any(t not in _JSON_TYPES for t in names):
            raise JsonSchemaError(f"{where}/type: {json.dumps(types)} is not a JSON Schema type "
                                  f"(one of {', '.join(_JSON_TYPES)}, or a list of them)")
        nullable = "null" in names
        kinds = [t for t in names if t != "null"]
        if not kinds:
            return pa.string(), True               # always null
        if set(kinds) == {"integer", "number"}:
            return pa.float64(), nullable
        if len(kinds) > 1:
            raise JsonSchemaError(f"{where}/type: a value of {' or '.join(kinds)} has no one Arrow "
                                  "type (give the value's schema as Spark DDL)")
        return self.one_type(kinds[0], node, where, seen, doc), nullable

    def one_type(self, kind: str, node: Mapping[str, Any], where: str, seen: tuple[str, ...],
                 doc: Any) -> pa.DataType:
        if kind == "object":
            return self.object_type(node, where, seen, doc)
        if kind == "array":
            return self.array_type(node, where, seen, doc)
        if kind == "string" and node.get("format") in _FORMATS:
            return _FORMATS[node["format"]]
        return _SCALARS[kind]

    def object_type(self, node: Mapping[str, Any], where: str, seen: tuple[str, ...], doc: Any
                    ) -> pa.DataType:
        properties = node.get("properties")
        if properties is None:
            extra = node.get("additionalProperties", True)
            if extra is False:
                return pa.struct([])
            item, _ = self.type_of(extra, f"{where}/additionalProperties", seen, doc)
            return pa.map_(pa.string(), item)
        if not isinstance(properties, Mapping):
            raise JsonSchemaError(f"{where}/properties: must be an object of schemas")
        required = node.get("required", [])
        if not isinstance(required, list):
            raise JsonSchemaError(f"{where}/required: must be a list of property names")
        fields = []
        for name, sub in properties.items():
            data_type, nullable = self.type_of(sub, f"{where}/properties/{_escape(name)}", seen, doc)
            fields.append(pa.field(name, data_type, nullable=nullable or name not in required))
        return pa.struct(fields)

    def array_type(self, node: Mapping[str, Any], where: str, seen: tuple[str, ...], doc: Any
                   ) -> pa.DataType:
        items = node.get("prefixItems", node.get("items"))
        key = "prefixItems" if "prefixItems" in node else "items"
        if items is None:
            return pa.list_(pa.string())
        if isinstance(items, list):
            kinds = {self.type_of(sub, f"{where}/{key}/{i}", seen, doc)[0] for i, sub in enumerate(items)}
            if len(kinds) != 1:
                raise JsonSchemaError(f"{where}/{key}: members of different types have no one "
                                      "Arrow element type (give the value's schema as Spark DDL)")
            return pa.list_(kinds.pop())
        item, _ = self.type_of(items, f"{where}/items", seen, doc)
        return pa.list_(item)

    def union(self, members: Any, where: str, seen: tuple[str, ...], doc: Any
              ) -> tuple[pa.DataType, bool]:
        if not isinstance(members, list) or not members:
            raise JsonSchemaError(f"{where}: must be a non-empty list of schemas")
        nullable = False
        found: list[pa.DataType] = []
        for i, sub in enumerate(members):
            if isinstance(sub, Mapping) and sub.get("type") == "null":
                nullable = True
                continue
            data_type, null = self.type_of(sub, f"{where}/{i}", seen, doc)
            nullable |= null
            if data_type not in found:
                found.append(data_type)
        if not found:
            return pa.string(), True
        if set(found) == {pa.int64(), pa.float64()}:
            return pa.float64(), nullable
        if len(found) > 1:
            raise JsonSchemaError(f"{where}: members of different types ({', '.join(map(str, found))}) "
                                  "have no one Arrow type (give the value's schema as Spark DDL)")
        return found[0], nullable


def _implied_type(node: Mapping[str, Any]) -> list[str] | None:
    """The types a schema without ``type`` implies by its keywords; None: any value."""
    if "properties" in node or "additionalProperties" in node:
        return ["object"]
    if "items" in node or "prefixItems" in node:
        return ["array"]
    values = node["enum"] if "enum" in node else [node["const"]] if "const" in node else None
    if not isinstance(values, list):
        return None
    kinds: list[str] = []
    for v in values:
        kind = ("null" if v is None else "boolean" if isinstance(v, bool) else "integer"
                if isinstance(v, int) else "number" if isinstance(v, float) else "string"
                if isinstance(v, str) else "array" if isinstance(v, list) else "object")
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
