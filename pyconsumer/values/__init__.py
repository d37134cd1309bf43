"""Typed values: Kafka record values decoded to Arrow (JSON, Avro, string).

Core-level: imports only :mod:`pyconsumer.errors`, :mod:`pyconsumer.structs`,
pyarrow and the stdlib. Every decoder returns a :class:`~pyconsumer.values.result.Decoded`.
"""
from __future__ import annotations

from pyconsumer.values.result import Decoded

__all__ = ["Decoded"]
