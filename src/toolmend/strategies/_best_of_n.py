"""``best-of-n``: sample N answers, pick the one with the fewest checker findings, then the one
most answers agree with, then the first."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

from toolmend._errors import ConfigError
from toolmend._schema import Message
from toolmend.check import Checker
from toolmend.guard._reask import turn_findings
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_answer, reply_format

__all__ = ["BestOfN"]


class BestOfN:
    """See the module docstring. Answer ``i`` of a request is its epoch ``e * n + i``, so sampled
    answers are cached apart."""

    name = "best-of-n"

    def __init__(self, n: int = 3) -> None:
        if n < 2:
            raise ConfigError(f"best-of-n needs n of at least 2, got {n}")
        self.n = n

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        fmt = reply_format(state.benchmark)
        checker = Checker(state.sample.tools) if state.sample.tools else None

        async def best(messages: list[Message], *, epoch: int | None = None) -> str:
            base = (epoch or 0) * self.n
            replies = list(await asyncio.gather(*(generate(messages, epoch=base + i) for i in range(self.n))))
            turns = [read_answer(r, fmt, state) for r in replies]
            keys = [
                json.dumps([[c.name, c.arguments] for c in t.calls], sort_keys=True, default=str)
                if t.calls
                else r.strip()
                for t, r in zip(turns, replies, strict=True)
            ]
            votes = Counter(keys)
            ranked = sorted(
                range(self.n), key=lambda i: (len(turn_findings(turns[i], checker)), -votes[keys[i]], i)
            )
            pick = ranked[0]
            state.events.append({"kind": "best-of-n", "n": self.n, "requests": self.n - 1, "picked": pick,
                                 "distinct": len(votes)})  # fmt: skip
            return replies[pick]

        return best
