"""net/responses.body_of: one overload per API, typed as that API's generated response body,
and at run time the body itself (no copy)."""
from __future__ import annotations

import ast
import inspect

from pyconsumer.net import responses
from pyconsumer.net.connection import Response
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey, bodies
from pyconsumer.protocol.schema import MESSAGES


def _overloads() -> dict[str, str]:
    """ApiKey member name -> the bodies class its overload returns, read from the source."""
    tree = ast.parse(inspect.getsource(responses))
    out: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == "body_of"
                and any(isinstance(d, ast.Name) and d.id == "overload"
                        for d in node.decorator_list)):
            continue
        api = node.args.args[1].annotation
        assert isinstance(api, ast.Subscript)          # Literal[ApiKey.X]
        member = api.slice
        assert isinstance(member, ast.Attribute) and isinstance(member.value, ast.Name)
        assert member.value.id == "ApiKey"
        returns = node.returns
        assert isinstance(returns, ast.Attribute) and isinstance(returns.value, ast.Name)
        assert returns.value.id == "bodies"
        assert member.attr not in out, f"two overloads for {member.attr}"
        out[member.attr] = returns.attr
    return out


def test_every_api_has_an_overload_giving_its_response_body() -> None:
    responses_by_key = {m.api_key: m.name for m in MESSAGES.values() if not m.is_request}
    expected = {api.name: responses_by_key[api] for api in ApiKey}
    assert _overloads() == expected
    for name in expected.values():
        assert hasattr(bodies, name), name


def test_the_body_is_handed_back_as_it_is() -> None:
    body = {"throttle_time_ms": 0, "topics": []}
    response = Response(ApiKey.LIST_OFFSETS, 7, 1, body)
    assert body_of(response, ApiKey.LIST_OFFSETS) is body
