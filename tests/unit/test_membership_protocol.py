"""The group wing's seams: both memberships are a Membership (checked by mypy through the typed
assignments below, and at run time), the coordinator takes its membership once through
attach(), and MemberState is defined in one place."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pyconsumer
from pyconsumer import KafkaConsumer
from pyconsumer.consumer.group.classic import GroupMembership
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.consumer.group.membership import Membership, MemberState

# mypy checks these structurally: a missing or mistyped Membership method fails the type check
CLASSIC: type[Membership] = GroupMembership
KIP848: type[Membership] = ConsumerProtocolMembership


@pytest.mark.parametrize("protocol, kind", [("classic", GroupMembership),
                                            ("consumer", ConsumerProtocolMembership)])
def test_each_membership_is_a_membership_attached_to_the_coordinator(
        protocol: str, kind: type[Membership]) -> None:
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", group_protocol=protocol)
    try:
        c._network()                       # builds the coordinator and membership; no I/O
        m = c._membership
        assert type(m) is kind
        assert isinstance(m, Membership)
        assert type(vars(m)["state"]) is MemberState          # the one enum, both protocols
        assert c._coordinator is not None
        assert c._coordinator._membership is m
        with pytest.raises(ValueError, match="already has a membership"):
            c._coordinator.attach(m)
    finally:
        c.close()


def test_an_object_missing_a_membership_method_is_not_a_membership() -> None:
    class Partial:
        listener = None

        def check_can_commit(self) -> None: ...

    assert not isinstance(Partial(), Membership)


def test_member_state_is_defined_once() -> None:
    root = Path(pyconsumer.__file__).parent
    defined = [path.relative_to(root).as_posix() for path in sorted(root.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name == "MemberState"]
    assert defined == ["consumer/group/membership.py"]
