"""The fetch wing: Fetch requests to partition leaders and the data they bring back.

Its interface is :class:`Fetcher`, what the consumer facade calls: ``send_fetches``,
``prefetch_now``, ``has_available``, ``drain``, ``clear_buffered``, ``close_sessions``,
``completions``, ``retry_in_ms``, ``prefetch`` and ``sessions``; :mod:`.decode` schedules
decode threads (poll_arrow's parallel takes). Inside: request.py builds and sends Fetch
requests (sessions, prefetch, read replicas), session.py keeps the KIP-227 fetch sessions.
"""
from __future__ import annotations

from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.request import Fetcher

__all__ = ["Fetcher", "decode"]
