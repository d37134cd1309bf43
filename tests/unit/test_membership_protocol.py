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


# --------------------------------------------------------------------------- identity and imports

def test_the_membership_owns_the_identity_and_the_coordinator_hears_it() -> None:
    """Each membership owns its member id and generation (epoch); the coordinator, registered
    as its MemberStateListener, hears what commits carry: the identity once the member is
    in a generation, none (-1, "") outside one."""
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g")
    try:
        c._network()
        m, coordinator = c._membership, c._coordinator
        assert isinstance(m, GroupMembership) and coordinator is not None
        assert (m.generation, m.member_id) == (-1, "")
        assert coordinator._commit_identity == (-1, "")
        m._set_generation(7, "member-1")              # what a JoinGroup answer does
        assert (m.generation, m.member_id) == (7, "member-1")
        assert coordinator._commit_identity == (7, "member-1")
        m.reset_generation("test")
        assert (m.generation, m.member_id) == (-1, "")
        assert coordinator._commit_identity == (-1, "")
    finally:
        c.close()
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", group_protocol="consumer")
    try:
        c._network()
        m848, coordinator = c._membership, c._coordinator
        assert isinstance(m848, ConsumerProtocolMembership) and coordinator is not None
        assert m848.member_id and m848.generation == 0         # its own id, epoch 0 to join
        assert coordinator._commit_identity == (-1, "")        # no epoch to commit with yet
        m848.member_epoch = 4
        m848.notify_epoch_change(4, m848.member_id)            # what a heartbeat answer does
        assert coordinator._commit_identity == (4, m848.member_id)
        m848._lose(MemberState.FENCED, "test")
        assert m848.generation == 0 and coordinator._commit_identity == (-1, "")
    finally:
        c.close()


def _imports(package: str) -> dict[str, set[str]]:
    """Module -> modules of ``package`` it imports (any import: type-only and in functions
    too)."""
    root = Path(pyconsumer.__file__).parent.parent
    base = root / package.replace(".", "/")
    modules = {}
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            out |= {t for t in targets if t in modules and t != name}
        graph[name] = out
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    found: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt > path[0]:           # each cycle once, from its smallest module
                walk(nxt, path + [nxt])

    for start in sorted(graph):
        walk(start, [start])
    return sorted({tuple(c) for c in found if c[0] == min(c)})


@pytest.mark.parametrize("package", ["pyconsumer.consumer.group", "pyconsumer.config"])
def test_no_import_cycle(package: str) -> None:
    assert _cycles(_imports(package)) == []


def test_the_coordinator_and_the_memberships_do_not_import_each_other() -> None:
    graph = _imports("pyconsumer.consumer.group")
    group = "pyconsumer.consumer.group."
    memberships = {group + m for m in ("membership", "classic", "consumer_protocol")}
    assert not graph[group + "coordinator"] & memberships
    assert all(group + "coordinator" not in graph[m] for m in memberships)
    assert group + "seams" in graph[group + "coordinator"]
