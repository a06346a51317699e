"""Fixtures for the proxy tests: a scripted upstream and ``toolmend serve`` in front of it, both
real servers on 127.0.0.1 (threads), so the real openai SDK and LangChain can talk to them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scripted_upstream import AppThread, Scene, ScriptedUpstream

from toolmend.serve import ServeConfig, create_app
from toolmend.serve._app import server_options


class Proxy:
    """A running proxy: ``url`` (…/v1), the ``upstream`` it talks to, and its app state."""

    def __init__(self, upstream: ScriptedUpstream, **config: Any) -> None:
        self.upstream = upstream
        self.config = ServeConfig(upstream=upstream.base_url, **config)
        self.app = create_app(self.config)
        self.thread = AppThread(self.app, options=server_options(self.config)).start()

    @property
    def url(self) -> str:
        return self.thread.url + "/v1"

    @property
    def metrics(self) -> Any:
        from toolmend.serve._app import PROXY

        return self.app[PROXY].metrics

    def counted(self, n: int) -> float:
        """``toolmend_requests_total`` once it reaches ``n`` (or after a bounded wait). The proxy
        counts a request after its handler returns, which can be just after the client has read
        the last byte; this thread waits, the proxy's own thread runs on."""
        for _ in range(500):
            if self.metrics.value("toolmend_requests_total") >= n:
                break
            time.sleep(0.01)
        return float(self.metrics.value("toolmend_requests_total"))

    def stop(self) -> None:
        self.thread.stop()


@pytest.fixture
def serve() -> Iterator[Callable[..., Proxy]]:
    """``serve(*scenes, **config)``: a scripted upstream and a proxy in front of it."""
    started: list[Proxy] = []

    def make(*scenes: Scene, handler: Any = None, **config: Any) -> Proxy:
        upstream = ScriptedUpstream(*scenes, handler=handler).start()
        proxy = Proxy(upstream, **config)
        started.append(proxy)
        return proxy

    yield make
    for p in started:
        p.stop()
        p.upstream.stop()
