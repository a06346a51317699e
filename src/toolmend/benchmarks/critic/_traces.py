"""Gold trajectories to build critique samples from: the built-in world, NesTools, BFCL.

A :class:`Trace` is a query, the offered tools, the gold calls (later ones may hold
:class:`~toolmend.Ref` values naming earlier outputs) and a way to get a fresh environment that
answers them. World traces execute for real against a fresh world; NesTools and BFCL tools have no
implementation, so their environment answers with the simulator's schema-shaped values (and,
like every environment, with a checker-derived error body for an invalid call).

>>> traces = load_traces("world", seed=0)
>>> traces[0].id.startswith("world-0-"), traces[0].make_env().execute(traces[0].calls[0]).ok
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from toolmend._errors import ConfigError
from toolmend._schema import Tool, ToolCall
from toolmend._shared import shared_dir
from toolmend.check import check
from toolmend.env import Environment, FaultPlan

if TYPE_CHECKING:
    from toolmend.world import Task

__all__ = ["Source", "Trace", "load_traces"]

Source = Literal["world", "nestools", "bfcl"]

EnvFactory = Callable[..., Environment]

# BFCL categories whose answers are executable-looking call lists (multi-call ones first).
_BFCL_CATEGORIES = ("parallel_multiple", "parallel", "multiple", "simple_python")


@dataclass
class Trace:
    """One gold trajectory and how to replay it."""

    id: str
    query: str
    tools: list[Tool]
    calls: list[ToolCall]
    source: str
    factory: EnvFactory = field(repr=False)
    context: list[dict[str, str]] = field(default_factory=list)
    """Earlier conversation turns (CriticTool roles) shown before the query; set by evolution."""
    evolution: list[str] = field(default_factory=list)
    """The SRM strategies applied to this trajectory (empty for the base variant)."""
    after: dict[int, list[int]] = field(default_factory=dict)
    """Per call index, the earlier calls it needs through the environment's state rather than
    through an output (the world's :attr:`~toolmend.world.Task.after`)."""

    def make_env(self, faults: FaultPlan | None = None) -> Environment:
        """A fresh environment for this trace (world state reset), with optional faults."""
        return self.factory(faults)


def _world(seed: int, offer: Callable[[Task], list[Tool]]) -> list[Trace]:
    from toolmend.world import World, generate_tasks

    def factory(task_seed: int) -> EnvFactory:
        def make(faults: FaultPlan | None = None) -> Environment:
            return World.create(task_seed).environment(faults=faults)

        return make

    out: list[Trace] = []
    for task in generate_tasks(seed):
        out.append(
            Trace(task.id, task.query, offer(task), task.calls, "world", factory(task.seed), after=task.after)
        )
    return out


def _simulated(tools: list[Tool]) -> EnvFactory:
    def make(faults: FaultPlan | None = None) -> Environment:
        return Environment(tools=tools, faults=faults, checker=check)

    return make


def _nestools(path: Path) -> list[Trace]:
    from toolmend.benchmarks.nestools import load_nestools

    return [
        Trace(f"nestools-{s.id}", s.messages[-1].content, s.tools, s.target, "nestools", _simulated(s.tools))
        for s in load_nestools(path)
    ]


def _bfcl(path: Path) -> list[Trace]:
    from toolmend.benchmarks.bfcl._data import load_bfcl

    out: list[Trace] = []
    for sample in load_bfcl(path, categories=_BFCL_CATEGORIES):
        if not sample.target:
            continue
        query = "\n".join(m.content for m in sample.messages if m.role == "user")
        tools = sample.tools
        out.append(Trace(f"bfcl-{sample.id}", query, tools, sample.target, "bfcl", _simulated(tools)))
    return out


def load_traces(
    source: Source | str,
    *,
    seed: int = 0,
    data: str | Path | None = None,
    tools: str = "all",
    distractors: int = 3,
) -> list[Trace]:
    """The gold trajectories of ``source``, in a deterministic order.

    ``world`` generates the tasks of ``World.create(seed)``, each offering every world tool, or with
    ``tools="domain"`` the tools of its own domains and ``distractors`` others (as ``toolmend bench
    world -o tools=domain`` offers them: a prompt a small context holds); ``nestools`` and ``bfcl``
    read the data folder ``data`` (default: the shared ``data/nestools`` / ``data/bfcl``) and offer
    each sample's own tools.

    >>> len(load_traces("world", tools="domain")[0].tools) < len(load_traces("world")[0].tools)
    True
    """
    from toolmend.world._tasks import tool_offer

    offer = tool_offer(tools, distractors)
    if source != "world" and tools != "all":
        raise ConfigError(f"tools={tools!r} narrows the world's tools; {source} samples offer their own")
    if source == "world":
        return _world(seed, offer)
    if source == "nestools":
        return _nestools(Path(data) if data is not None else shared_dir() / "data" / "nestools")
    if source == "bfcl":
        return _bfcl(Path(data) if data is not None else shared_dir() / "data" / "bfcl")
    raise ConfigError(f"unknown trajectory source {source!r}; expected world, nestools or bfcl")
