"""The built-in tool world: :class:`World` = seeded state + the 50 domain tools.

>>> world = World.create(seed=3)
>>> len(world.tools) >= 40
True
>>> env = world.environment()
>>> env.execute(ToolCall(name="maps_geocode", arguments={"city": "Paris"})).data["country"]
'France'
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from toolmend.check import check
from toolmend.env.cache import ToolCache
from toolmend.env.environment import Environment, Simulator
from toolmend.env.faults import FaultPlan
from toolmend.env.validate import CheckFn
from toolmend.schema import Tool, ToolCall
from toolmend.world.create import create_state
from toolmend.world.domains import WORLD_TOOLS
from toolmend.world.state import WorldState

__all__ = ["World"]


@lru_cache(maxsize=32)
def _initial_state(seed: int) -> dict[str, Any]:
    # Generating a state draws thousands of random numbers and builds every record; validating
    # its dump is ~4x cheaper and yields a fully independent copy (pydantic rebuilds every model,
    # list and dict), so each seed is generated once and handed out as fresh copies.
    return create_state(seed).model_dump()


class World:
    """A deterministic world of mail, calendar, files, weather, maps, finance, travel, shopping,
    contacts and to-dos; every tool is a Python function over :attr:`state`."""

    def __init__(self, state: WorldState) -> None:
        self.state = state
        self._fingerprint: tuple[int, str] | None = None

    @classmethod
    def create(cls, seed: int = 0) -> World:
        """A fresh world for ``seed``: same seed, same world (and never shared state).

        >>> a, b = World.create(1), World.create(1)
        >>> a.fingerprint() == b.fingerprint(), a.state is b.state
        (True, False)
        """
        return cls(WorldState.model_validate(_initial_state(seed)))

    @property
    def seed(self) -> int:
        return self.state.seed

    @property
    def tools(self) -> list[Tool]:
        """The specs of every tool of the world."""
        return WORLD_TOOLS.tools

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-compatible data (for diffs and state-based grading)."""
        return self.state.model_dump(mode="json")

    def fingerprint(self) -> str:
        """SHA-256 of the state; recomputed only after a write."""
        if self._fingerprint is None or self._fingerprint[0] != self.state.version:
            text = json.dumps(self.snapshot(), sort_keys=True, separators=(",", ":"))
            self._fingerprint = (self.state.version, hashlib.sha256(text.encode()).hexdigest())
        return self._fingerprint[1]

    def environment(
        self,
        *,
        cache: ToolCache | None = None,
        simulator: Simulator | None = None,
        faults: FaultPlan | None = None,
        checker: CheckFn | None = check,
        extra_tools: list[Tool] | None = None,
    ) -> Environment:
        """An :class:`~toolmend.env.Environment` that executes calls against this world,
        with the checklist (:func:`toolmend.check.check`) in front unless ``checker`` says otherwise.

        Cache keys include the state's fingerprint, so a cache may be shared between worlds
        and runs without ever serving an answer computed on a different state.
        """
        return Environment(
            WORLD_TOOLS,
            tools=extra_tools or (),
            cache=cache,
            simulator=simulator,
            faults=faults,
            context={"state": self.state},
            cache_scope=self.fingerprint,
            checker=checker,
        )

    def execute(self, calls: list[ToolCall]) -> list[Any]:
        """Run calls in a fresh environment (no checker) and return the responses."""
        return list(self.environment(checker=None).run(calls))
