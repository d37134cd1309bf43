"""Writer schemas by id or GUID from a Schema Registry, for one column's decoder: an id the
registry answered "not found" for is not asked again for a while, so a topic full of records
naming a deleted schema does not send one request per batch. A registry that cannot be
reached raises as the client does (an outage is never a bad row)."""
from __future__ import annotations

import time
import uuid

from pyconsumer.values.avro_decode import SchemaId, UnknownSchemaError
from pyconsumer.values.registry import RegisteredSchema, SchemaNotFoundError, SchemaRegistryClient

__all__ = ["NOT_FOUND_TTL_S", "RegistryWriters", "schema_name"]

#: how long an id the registry answered "not found" for is not asked again
NOT_FOUND_TTL_S = 30.0


def schema_name(schema_id: SchemaId) -> str:
    """``schema id 5`` or ``schema GUID …``, as messages name a writer schema."""
    return f"schema GUID {schema_id}" if isinstance(schema_id, uuid.UUID) else f"schema id {schema_id}"


class RegistryWriters:
    """The registered writer schemas one decoder asks for, with the not-found answers kept."""

    def __init__(self, registry: SchemaRegistryClient) -> None:
        self._registry = registry
        self._missing: dict[SchemaId, tuple[float, str]] = {}

    def fetch(self, schema_id: SchemaId) -> RegisteredSchema:
        """The registered schema of ``schema_id``; :class:`UnknownSchemaError` (a bad row of
        the records naming it) when the registry does not know it, now or a short while ago."""
        missing = self._missing.get(schema_id)
        if missing is not None and time.monotonic() - missing[0] < NOT_FOUND_TTL_S:
            raise UnknownSchemaError(missing[1])
        try:
            if isinstance(schema_id, int):
                return self._registry.schema_by_id(schema_id)
            return self._registry.schema_by_guid(schema_id)
        except SchemaNotFoundError as e:
            reason = f"unknown {schema_name(schema_id)} ({e})"
            self._missing[schema_id] = (time.monotonic(), reason)
            raise UnknownSchemaError(reason) from e
