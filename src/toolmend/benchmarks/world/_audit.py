"""``toolmend bench world --audit``: is every task passable, and is its gold state unambiguous?

For each task the audit checks that

1. every gold call succeeds and the gold trajectory, replayed as a model's replies through the
   benchmark's own loop (checker in front), scores success and the all-or-nothing verdict;
2. executing the gold trajectory twice gives the same final state (no hidden nondeterminism);
3. every other order of the gold calls that respects their dependencies (each call after the
   calls whose outputs it uses and those :attr:`Task.after` names) — each is an equally valid
   gold trajectory — succeeds and ends in the same state. An order that breaks this shows a
   dependency through the state that the task does not record.

BFCL's multi-turn set held items that no model could pass (gorilla issue #1367); this is the check
that finds such items before models are blamed for them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, Field

from toolmend._errors import DatasetError
from toolmend.env._environment import Environment
from toolmend.world import WORLD_TOOLS, World
from toolmend.world._episode import Episode
from toolmend.world._grading import diff_state, gold_run
from toolmend.world._tasks import Task

__all__ = ["AuditIssue", "AuditReport", "audit_tasks"]

_MAX_ORDERS = 24


class AuditIssue(BaseModel):
    """One problem with one task."""

    task: str
    check: str
    """``gold_fails``, ``not_passable``, ``nondeterministic`` or ``order_dependent``."""
    message: str


class AuditReport(BaseModel):
    """What :func:`audit_tasks` found."""

    tasks: int
    orders_checked: int
    issues: list[AuditIssue] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues

    @property
    def bad_tasks(self) -> list[str]:
        return sorted({i.task for i in self.issues})

    def summary(self) -> str:
        """One line: what was checked and how many tasks have problems."""
        return (
            f"{self.tasks} tasks, {self.orders_checked} alternative gold orders executed: "
            f"{len(self.bad_tasks)} task(s) with problems"
        )


def _orders(task: Task) -> Iterator[tuple[int, ...]]:
    """Orders of the gold calls in which each call comes after the calls whose outputs it uses."""
    deps = task.dependencies()
    for order in itertools.permutations(range(len(task.calls))):
        position = {i: p for p, i in enumerate(order)}
        if all(position[d] < position[i] for i in order for d in deps[i]):
            yield order


def _final_changes(task: Task, order: Sequence[int]) -> tuple[dict[str, object] | None, str]:
    world = World.create(task.seed)
    initial = world.snapshot()
    env = Environment(WORLD_TOOLS, checker=None, context={"state": world.state})
    for i in order:
        response = env.execute(task.calls[i])
        if not response.ok:
            return None, f"call {i} ({task.calls[i].name}) fails: {response.content[:160]}"
    return diff_state(initial, world.snapshot()), ""


def audit_tasks(tasks: Sequence[Task], replies: object = None) -> AuditReport:
    """Audit ``tasks`` (see the module docstring)."""
    from toolmend.benchmarks.world._benchmark import WorldBenchmark

    bench = WorldBenchmark()
    issues: list[AuditIssue] = []
    checked = 0
    for task in tasks:
        try:
            gold = gold_run(task)
        except DatasetError as exc:
            issues.append(AuditIssue(task=task.id, check="gold_fails", message=str(exc)))
            continue
        sample = bench.load_tasks([task])[0]
        episode: Episode = bench.episode(sample)
        for reply in bench.gold(sample):
            episode.observe(str(reply))
        grade = episode.grade(gold)
        if not (grade.success and grade.all_or_nothing and grade.harm == 0):
            issues.append(
                AuditIssue(
                    task=task.id,
                    check="not_passable",
                    message=f"gold replay: success={grade.success} all_or_nothing={grade.all_or_nothing} "
                    f"harm={grade.harm} missed={grade.missed_changes[:3]}",
                )
            )
        if gold_run(task).changes != gold.changes:
            issues.append(AuditIssue(task=task.id, check="nondeterministic", message="two gold runs differ"))
        for order in itertools.islice(_orders(task), _MAX_ORDERS):
            if list(order) == sorted(order):
                continue
            checked += 1
            changes, problem = _final_changes(task, order)
            if changes is None:
                issues.append(
                    AuditIssue(
                        task=task.id, check="order_dependent", message=f"order {list(order)}: {problem}"
                    )
                )
            elif changes != gold.changes:
                diff = sorted(
                    set(changes) ^ set(gold.changes)
                    | {p for p in changes if changes[p] != gold.changes.get(p)}
                )
                issues.append(
                    AuditIssue(
                        task=task.id,
                        check="order_dependent",
                        message=f"order {list(order)} ends in a different state ({', '.join(diff[:3])})",
                    )
                )
    return AuditReport(tasks=len(tasks), orders_checked=checked, issues=issues)
