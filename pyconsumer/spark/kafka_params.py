"""The ``kafka.*`` options of the Spark source: Kafka consumer settings, passed on to
pyconsumer's consumer with the prefix stripped.

Refused where the source itself decides (where to start, deserializing, committing), and
checked early, so that a bad setting fails with its option name rather than later in a driver
or a task.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from pyconsumer.errors import ConfigurationError

__all__ = ["parse_kafka_params", "consumer_settings", "check_consumer_settings"]


def parse_kafka_params(opts: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options of ``opts`` (keys lower-cased), prefix stripped; refused where
    the source decides instead, and ``bootstrap.servers`` required."""
    params = {k[len("kafka."):]: v for k, v in opts.items()
              if k.startswith("kafka.") and len(k) > len("kafka.")}
    if "auto.offset.reset" in params:
        raise ConfigurationError(
            "Option 'kafka.auto.offset.reset': Kafka option 'auto.offset.reset' is not "
            "supported. Set the source option 'startingOffsets' to 'earliest' or 'latest' "
            "instead, to say where to start: the source itself decides which offsets are "
            "read, rather than the Kafka consumer, so that no data is missed when topics or "
            "partitions are added to a subscription. 'startingOffsets' only applies when a new "
            "streaming query starts; a resumed query always continues where it stopped.")
    for name, what in (("key.deserializer", "keys"), ("value.deserializer", "values")):
        if name in params:
            raise ConfigurationError(
                f"Option 'kafka.{name}': Kafka option '{name}' is not supported: {what} are "
                f"read as bytes (binary column) unless the source option "
                f"'{what[:-1]}Format' says otherwise (string, json, avro); or use DataFrame "
                f"operations to deserialize the {what}.")
    if "enable.auto.commit" in params:
        raise ConfigurationError(
            "Option 'kafka.enable.auto.commit': Kafka option 'enable.auto.commit' is not "
            "supported: the source tracks the offsets it has read in the query's checkpoint, "
            "not in Kafka (see the option 'commitOffsetsToKafka' to also commit them to a "
            "group).")
    if "interceptor.classes" in params:
        raise ConfigurationError(
            "Option 'kafka.interceptor.classes': Kafka option 'interceptor.classes' is not "
            "supported: interceptors could change the records, and the source reads them as "
            "raw bytes.")
    if "bootstrap.servers" not in params:
        raise ConfigurationError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring the Kafka "
            "consumer")
    if not params["bootstrap.servers"].strip():
        raise ConfigurationError("Option 'kafka.bootstrap.servers' is empty: give a "
                                 "comma-separated list of host:port")
    return params


def consumer_settings(params: Mapping[str, str]) -> dict[str, str]:
    """A consumer's settings from the ``kafka.*`` options (see
    :meth:`~pyconsumer.spark.options.SourceOptions.consumer_settings`)."""
    settings = dict(params)
    if not settings.get("group.id", "").strip():
        settings.pop("group.id", None)
    settings["enable.auto.commit"] = "false"
    return settings


def check_consumer_settings(params: Mapping[str, str]) -> None:
    """The ``kafka.*`` options as pyconsumer's consumer takes them (the ``kafka.ssl.*`` stores
    read into the TLS context), checked now so that a bad one fails with its option name
    instead of later in a driver or task. Unknown settings
    are refused: Spark's Java consumer only logs a warning for them, so a misspelled
    setting silently does nothing there."""
    from pyconsumer.config import ConsumerConfig
    from pyconsumer.config.ssl import build_ssl_context

    try:
        # the TLS context too: a store's wrong password or type is named by its option here
        build_ssl_context(ConsumerConfig(**consumer_settings(params)))
    except ConfigurationError as e:
        text = str(e)
        named = [k for k in params if re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", text)]
        where = ", ".join(f"'kafka.{k}'" for k in named) or "kafka.*"
        raise ConfigurationError(f"Option {where}: {text}") from None
