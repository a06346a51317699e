"""Tasks of the built-in world: a user query and a gold trajectory of 1–6 calls.

Tasks come from templates (:mod:`toolmend.world._templates`) instantiated with a seeded
``random.Random`` over the initial state of ``World.create(seed)``, so the gold calls refer to
ids and values that exist in that world. Later calls use earlier outputs NesTools-style: a call
binds placeholders ``API_call_<n>`` (numbered across the task from 0) to dotted paths into its
JSON result (``ToolCall.outputs`` + ``ToolCall.output_fields``, e.g. ``"flights.0.flight_id"``),
and later arguments hold :class:`~toolmend.Ref` values naming them. Calls that do not depend on
each other can run in parallel; :attr:`Task.levels` tells which. A call can also need an earlier
one through the world's state rather than an output (the checkout needs the cart that adding to it
filled): :meth:`Chain.order` records such a dependency in :attr:`Task.after`.

>>> tasks = generate_tasks(seed=0)
>>> t = next(t for t in tasks if t.depth >= 2)
>>> responses = World.create(t.seed).environment().run(t.calls)
>>> all(r.ok for r in responses)
True
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, model_validator

from toolmend._errors import ConfigError, DatasetError
from toolmend._schema import Message, Ref, Sample, Tool, ToolCall, dependencies
from toolmend.world._state import WorldState
from toolmend.world._world import World
from toolmend.world.domains import WORLD_TOOLS, domain_of

__all__ = ["Chain", "Task", "TaskTemplate", "generate_tasks", "tool_offer"]


class Chain:
    """Builds a gold trajectory, numbering placeholders as NesTools does."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.after: dict[int, list[int]] = {}
        self._next = 0

    def call(self, tool: str, fields: tuple[str, ...] | list[str] = (), /, **arguments: Any) -> list[Ref]:
        """Append a call; return one :class:`Ref` per output field, in order."""
        outputs = [f"API_call_{self._next + i}" for i in range(len(fields))]
        self._next += len(fields)
        self.calls.append(
            ToolCall(name=tool, arguments=arguments, outputs=outputs, output_fields=list(fields))
        )
        return [Ref(target=o) for o in outputs]

    def order(self, first: int, then: int) -> None:
        """Call ``then`` needs call ``first`` to have run, through the state (it uses no output of
        it): for example a checkout needs the cart that an earlier call filled."""
        if not 0 <= first < then < len(self.calls):
            raise DatasetError(f"order({first}, {then}): needs 0 <= first < then < {len(self.calls)}")
        self.after.setdefault(then, []).append(first)


TaskTemplate = Callable[[WorldState, random.Random, Chain], str]
"""Fills a :class:`Chain` from the state and returns the user's query."""


class Task(BaseModel):
    """A query, the world it runs in (``seed``) and its gold calls."""

    id: str
    seed: int
    template: str
    query: str
    calls: list[ToolCall]
    domains: list[str] = Field(default_factory=list)
    after: dict[int, list[int]] = Field(default_factory=dict)
    """Per call index, the earlier calls it needs through the world's state (beyond the calls
    whose outputs it uses)."""

    @model_validator(mode="after")
    def _earlier(self) -> Task:
        for later, firsts in self.after.items():
            if not 0 <= later < len(self.calls) or any(not 0 <= f < later for f in firsts):
                raise ValueError(f"after[{later}] = {firsts}: each must name an earlier call")
        return self

    def dependencies(self) -> list[set[int]]:
        """Per call, the calls that must run before it: those whose outputs it uses, and those of
        :attr:`after`."""
        return dependencies(self.calls, after=self.after)

    @property
    def levels(self) -> list[int]:
        """Per call, how many calls must run before it (0 = can start at once)."""
        levels: list[int] = []
        for deps in self.dependencies():
            levels.append(1 + max(levels[d] for d in deps) if deps else 0)
        return levels

    @property
    def depth(self) -> int:
        """Length of the longest dependency chain (1 = no nesting), as NesTools counts depth."""
        return max(self.levels, default=-1) + 1

    @property
    def parallel(self) -> bool:
        """Whether two or more calls could run side by side."""
        levels = self.levels
        return any(levels.count(level) > 1 for level in set(levels))

    def offered_tools(self, distractors: int = 3) -> list[Tool]:
        """The tools of the task's domains plus ``distractors`` others, drawn from the task id (so
        a task offers the same tools wherever it is built), in the world's tool order.

        >>> task = generate_tasks(seed=0)[0]
        >>> sorted({domain_of(t.name) for t in task.offered_tools(0)}) == task.domains
        True
        """
        others = [t for t in WORLD_TOOLS.tools if domain_of(t.name) not in self.domains]
        picked = {
            t.name for t in random.Random(f"offer:{self.id}").sample(others, min(distractors, len(others)))
        }
        return [t for t in WORLD_TOOLS.tools if t.name in picked or domain_of(t.name) in self.domains]

    def to_sample(self) -> Sample:
        """The task as a :class:`~toolmend.Sample` offering every world tool."""
        return Sample(
            id=self.id,
            messages=[Message(role="user", content=self.query)],
            tools=WORLD_TOOLS.tools,
            target=self.calls,
            metadata={
                "seed": self.seed,
                "template": self.template,
                "depth": self.depth,
                "parallel": self.parallel,
                "domains": self.domains,
            },
        )


def generate_tasks(seed: int = 0, per_template: int = 5) -> list[Task]:
    """Up to ``per_template`` distinct tasks from every template, for the world of ``seed``.

    Deterministic: the same arguments give the same tasks.
    """
    from toolmend.world._templates import TEMPLATES

    state = World.create(seed).state
    tasks: list[Task] = []
    for name, template in TEMPLATES.items():
        rng = random.Random(f"{seed}:{name}")
        seen: set[str] = set()
        for _ in range(per_template * 6):
            if len(seen) == per_template:
                break
            chain = Chain()
            query = template(state, rng, chain)
            if query in seen:
                continue
            seen.add(query)
            domains = sorted({domain_of(c.name) for c in chain.calls})
            tasks.append(
                Task(
                    id=f"world-{seed}-{name}-{len(seen)}",
                    seed=seed,
                    template=name,
                    query=query,
                    calls=chain.calls,
                    domains=domains,
                    after=chain.after,
                )
            )
    return tasks


def tool_offer(tools: str, distractors: int) -> Callable[[Task], list[Tool]]:
    """The tools each task offers: ``all`` the world's, or ``domain``: the task's own domains'
    and ``distractors`` others (:meth:`Task.offered_tools`). Refuses any other choice at once,
    before a task is built, with a :class:`~toolmend.ConfigError`.

    >>> task = generate_tasks(seed=0)[0]
    >>> len(tool_offer("domain", 0)(task)) < len(tool_offer("all", 3)(task))
    True
    """
    if tools not in ("all", "domain"):
        raise ConfigError(f"tools must be all or domain, got {tools!r}")
    if distractors < 0:
        raise ConfigError(f"distractors must be at least 0, got {distractors}")
    if tools == "all":
        return lambda task: WORLD_TOOLS.tools
    return lambda task: task.offered_tools(distractors)
