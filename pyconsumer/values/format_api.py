"""The one interface every value format implements (binary, string, json, avro, ...).

A format is a stateless object, registered by name in :mod:`pyconsumer.values.formats`. It says
which options it takes (a schema, a registry subject, a framing), what a column lacks (in the
words of the front end that asks: the consumer's settings or the Spark source's options), and
makes the decoder of one column of one plan (:class:`ColumnDecoder`: the Arrow type for a topic,
raw bytes -> the typed column). The front ends (:class:`~pyconsumer.values.typed.TypedValues`,
the Spark source, ``pyconsumer ingest``) hold the generic rules and ask the format the rest, so a
new format is one class and its registration.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import pyarrow as pa

from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.registry import SchemaRegistryClient, SubjectNameStrategy
from pyconsumer.values.result import Decoded

__all__ = ["ValueFormat", "ColumnDecoder", "ColumnSpec", "Words", "DEFAULT_FRAMING"]

#: the framing a column has when none is set (a format without framings ignores it)
DEFAULT_FRAMING = "confluent"

#: the option suffixes a front end names: TypedValues' setting, the Spark source's option
_SETTING = {"format": "format", "schema": "schema", "subject": "subject", "framing": "avro.framing"}
_OPTION = {"format": "Format", "schema": "Schema", "subject": "Subject", "framing": "AvroFraming"}


@dataclass(frozen=True)
class Words:
    """How a front end names one column's options in its messages: TypedValues' settings
    (``value.schema``) or, with ``source``, the Spark source's options (``valueSchema``)."""

    column: str
    source: bool = False

    def __call__(self, option: str) -> str:
        """``format``, ``schema``, ``subject`` or ``framing`` as this front end spells it."""
        if self.source:
            return f"{self.column}{_OPTION[option]}"
        return f"{self.column}.{_SETTING[option]}"


class ColumnSpec(Protocol):
    """What a format reads of a column's options (:class:`~pyconsumer.values.typed.ColumnFormat`)."""

    @property
    def schema(self) -> Any: ...

    @property
    def framing(self) -> str: ...

    @property
    def subject(self) -> str | None: ...

    @property
    def options(self) -> tuple[tuple[str, Any], ...]: ...


class ColumnDecoder(Protocol):
    """One column (``key`` or ``value``) of one plan in one format: thread-safe, it may keep
    state for the plan's life (an Avro reader fixed at first use, compiled writer programs)."""

    def arrow_type(self, topic: str) -> pa.DataType:
        """The column's Arrow type for ``topic`` (a reader from the registry may be asked once)."""
        ...

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        """``raw`` (the column of ``batch``, all of ``topic``) decoded; the schema ids the rows
        name are added to ``ids`` (the metrics)."""
        ...


class ValueFormat(ABC):
    """A value format: its name, the options it takes, what it lacks, its column decoder."""

    #: the name users write (``value.format=json``, ``valueFormat=json``)
    name: ClassVar[str]
    #: False for the format that hands the bytes out as read (binary): nothing is decoded, no
    #: row is ever malformed, no corrupt-record column is added
    decodes: ClassVar[bool] = True
    #: the format reads ``value.schema`` / ``valueSchema`` (required or optional: see
    #: :meth:`missing_schema`); a format that does not refuses one
    takes_schema: ClassVar[bool] = False
    #: the reader schema may be the registry's latest of a subject (``value.subject``, the
    #: subject name strategies); without a schema and a subject, one per topic
    takes_subject: ClassVar[bool] = False
    #: the framings ``value.avro.framing`` may choose (the first is the default); empty: none
    framings: ClassVar[tuple[str, ...]] = ()
    #: the registry's ``schemaType`` of this format's schemas (``AVRO``) and its name in
    #: messages (``Avro``): a subject's latest of another type is refused
    schema_type: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: the nested nullability of the decoder's Arrow type is the one Spark's own function for
    #: the format declares (from_protobuf keeps required fields, repeated elements and map values
    #: not null), so the Spark source declares it as is; False: every nested field nullable, as
    #: from_json and from_avro in PERMISSIVE declare
    exact_nullability: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<value format {self.name}>"

    def missing_schema(self, framing: str, words: Words) -> str | None:
        """Why a column of this format with ``framing`` and no schema cannot work, in the front
        end's words; None when it can."""
        return None

    def needs_registry(self, framing: str, has_schema: bool) -> bool:
        """Whether a column with ``framing`` (and a schema given, or not) reads schemas from a
        Schema Registry."""
        return False

    def missing_registry(self, words: Words) -> str:
        """Why a column that :meth:`needs_registry` cannot work without one."""
        raise NotImplementedError(f"{self.name} reads no schema registry")

    def missing_registry_option(self, words: Words) -> str:
        """The option an error for :meth:`missing_registry` names: the registry's URL, or what
        the user more likely left out."""
        return "schema.registry.url"

    def reads_headers(self, framing: str) -> bool:
        """Whether the decoder reads the batch's ``headers`` column (a schema id in a header)."""
        return False

    #: the format's own settings after ``value.`` (``protobuf.message``): the front ends pass
    #: them to the decoder in :attr:`ColumnSpec.options`; empty: the format has none
    option_names: ClassVar[tuple[str, ...]] = ()

    def schema_from_options(self, options: dict[str, Any]) -> Any:
        """The column's schema when a format option gives it (a descriptor set file), else None."""
        return None

    def schema_from_text(self, text: str) -> Any:
        """The Spark source's schema option text, checked, as the plan takes it; raises
        :class:`~pyconsumer.errors.ConfigurationError` saying what is wrong (the caller names
        the option). Only called when :attr:`takes_schema`."""
        raise NotImplementedError(f"{self.name} takes no schema")

    def registered_reader(self, text: str, references: Sequence[tuple[str, str]]) -> Any:
        """A reader schema from the registry's text of one of :attr:`schema_type` (and its
        references as (name, text), a dependency first), as a driver fixes it for a query; raises
        :class:`~pyconsumer.errors.ConfigurationError` saying why it does not parse. Only
        called when :attr:`takes_subject`."""
        raise NotImplementedError(f"{self.name} reads no reader schema from a registry")

    @abstractmethod
    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        """The decoder of ``column`` (``key`` or ``value``) for one plan. A schema that does not
        parse raises :class:`~pyconsumer.errors.ConfigurationError` naming ``{column}.schema``."""
