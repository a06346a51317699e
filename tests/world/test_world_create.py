"""World.create hands out independent copies of one generated state per seed."""

from __future__ import annotations

from toolmend._schema import ToolCall
from toolmend.world import World
from toolmend.world._create import create_state


def test_create_equals_a_fresh_generation() -> None:
    for seed in (0, 7):
        assert World.create(seed).state == create_state(seed)


def test_copies_do_not_share_state() -> None:
    a, b = World.create(4), World.create(4)
    assert a.state is not b.state
    first = next(iter(a.state.emails.values()))
    first.to.append("intruder@example.com")
    a.state.todos.clear()
    assert b.state == create_state(4)
    assert World.create(4).state == create_state(4)


def test_writes_in_one_world_are_invisible_to_the_next() -> None:
    world = World.create(2)
    before = World.create(2).fingerprint()
    env = world.environment()
    response = env.execute(ToolCall(name="todo_create", arguments={"title": "Water the plants"}))
    assert response.ok, response.content
    assert world.fingerprint() != before
    assert World.create(2).fingerprint() == before
