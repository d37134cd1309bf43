"""The faults a test scripts into the fake: a rule that answers the next requests of an API
with an error, holds them, or hangs up on them (:meth:`FakeCluster.inject`, ``delay``,
``drop_next``), and the type of a test's own handler (:meth:`FakeCluster.control`)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pyconsumer.protocol import ApiKey

from .common import Body, Request

#: a test's own handler: the answer to a request, or None to fall through to the fake's
Control = Callable[[Request], "Body | None"]


@dataclasses.dataclass
class Rule:
    kind: str                       # "error" | "delay" | "drop"
    api: ApiKey
    broker: int | None
    count: int | None               # None: forever
    error: int = 0
    seconds: float = 0.0

    def take(self, req: Request) -> bool:
        """Whether the rule applies to ``req`` (using up one of its ``count`` if so)."""
        if self.api != req.api or (self.broker is not None and self.broker != req.broker):
            return False
        if self.count is not None:
            if self.count <= 0:
                return False
            self.count -= 1
        return True


__all__ = ["Control", "Rule"]
