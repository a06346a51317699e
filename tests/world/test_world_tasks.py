"""Every gold trajectory of the built-in world executes, and the task set has the promised shape."""

from __future__ import annotations

from collections import Counter

import pytest

from toolmend._schema import Ref
from toolmend.world import World
from toolmend.world._tasks import Task, generate_tasks


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return generate_tasks(seed=0)


def test_every_gold_trajectory_executes_cleanly(tasks: list[Task]) -> None:
    assert len(tasks) >= 150
    failures = []
    for task in tasks:
        env = World.create(task.seed).environment()
        responses = env.run(task.calls)
        bad = [
            (c.name, r.error, r.content[:120]) for c, r in zip(task.calls, responses, strict=True) if not r.ok
        ]
        if bad or any(r.source != "execution" for r in responses):
            failures.append((task.id, bad))
    assert not failures, failures[:5]


def test_refs_resolve_to_earlier_outputs(tasks: list[Task]) -> None:
    task = next(t for t in tasks if t.template == "trip_book_and_share")
    env = World.create(task.seed).environment()
    responses = env.run(task.calls)
    search = responses[1].data
    event = responses[3].data
    assert event["start_time"] == search["flights"][0]["depart_time"]
    assert responses[4].data["recipients"] == [responses[0].data["contacts"][0]["email"]]


def test_task_lengths_nesting_and_parallel_calls(tasks: list[Task]) -> None:
    lengths = Counter(len(t.calls) for t in tasks)
    assert min(lengths) == 1 and max(lengths) == 6
    assert all(1 <= n <= 6 for n in lengths)
    nested = [t for t in tasks if t.depth >= 2]
    assert len(nested) >= 100
    assert any(t.depth >= 3 for t in tasks)
    assert sum(t.parallel for t in tasks) >= 30
    for t in nested:
        refs = [v for c in t.calls for v in c.arguments.values() if isinstance(v, Ref)] + [
            x
            for c in t.calls
            for v in c.arguments.values()
            if isinstance(v, list)
            for x in v
            if isinstance(x, Ref)
        ]
        assert refs, t.id
        assert all(r.target.startswith("API_call_") for r in refs)


def test_cross_domain_chains_present(tasks: list[Task]) -> None:
    cross = [t for t in tasks if len(t.domains) >= 2]
    assert len(cross) >= 40
    assert any({"travel", "calendar", "mail"} <= set(t.domains) for t in cross)


def test_levels_reflect_dependencies(tasks: list[Task]) -> None:
    task = next(t for t in tasks if t.template == "trip_flight_and_hotel")
    # contacts + flight search + hotel search start together; bookings wait on searches; mail on contacts.
    assert task.levels == [0, 0, 0, 1, 1, 1]
    assert task.parallel and task.depth == 2


def test_generation_is_deterministic_and_seed_dependent() -> None:
    a, b = generate_tasks(seed=4), generate_tasks(seed=4)
    assert [t.model_dump() for t in a] == [t.model_dump() for t in b]
    c = generate_tasks(seed=5)
    assert [t.query for t in a] != [t.query for t in c]


def test_task_ids_unique_and_sample_round_trip(tasks: list[Task]) -> None:
    assert len({t.id for t in tasks}) == len(tasks)
    sample = tasks[0].to_sample()
    assert sample.messages[0].content == tasks[0].query
    assert len(sample.tools) >= 40
    again = type(sample).model_validate(sample.model_dump())
    assert again.target == sample.target
