"""WorldEnv (reset / step / reward) and the TRL environment_factory form of the world."""

from __future__ import annotations

import inspect
import json

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.world import WORLD_TOOLS, WorldEnv, generate_tasks, trl_environment_factory, world_dataset
from toolmend.world._schedule import FaultSchedule


def test_gold_replies_end_the_episode_with_reward_one() -> None:
    env = WorldEnv()
    first = env.reset("world-0-trip_flight_and_hotel-1")
    assert [m.role for m in first] == ["system", "user"]
    replies = env.gold_replies()
    results = [env.step(r) for r in replies]
    assert [r.done for r in results] == [False] * (len(replies) - 1) + [True]
    assert results[-1].reward == 1.0 and results[-1].info["grade"]["success"]
    assert results[0].reward == 0.0
    assert all(m.role == "tool" for m in results[0].observation)


def test_step_takes_calls_and_partial_reward_counts_what_was_done() -> None:
    env = WorldEnv(reward="partial")
    env.reset("world-0-trip_flight_and_hotel-1")
    gold = env._gold()
    # Both bookings but not the e-mail: partial credit, no success.
    result = env.step(gold.calls[:5])
    assert not result.done and [m.tool_call_id for m in result.observation] == [
        f"call_0_{k}" for k in range(5)
    ]
    assert 0.0 < env.reward("Booked.") < 1.0


def test_reset_cycles_tasks_and_rejects_unknown_ones() -> None:
    tasks = generate_tasks(0)[:3]
    env = WorldEnv(tasks)
    seen = [env.reset()[-1].content for _ in range(4)]
    assert seen == [t.query for t in tasks] + [tasks[0].query]
    with pytest.raises(ConfigError, match="no world task"):
        env.reset("nope")
    with pytest.raises(ConfigError, match="reset"):
        WorldEnv(tasks).step("hi")


def test_faults_reach_the_rl_episode() -> None:
    env = WorldEnv(faults="heavy")
    task = next(t for t in env.tasks if FaultSchedule.named("heavy").for_task(t)[0].kind == "timeout")
    env.reset(task)
    for reply in env.gold_replies():
        result = env.step(reply)
    assert result.done and result.info["faults"][0]["kind"] == "timeout"


def test_trl_form_exposes_exactly_reset_get_reward_and_the_world_tools() -> None:
    env = trl_environment_factory()()
    public = {n for n, _ in inspect.getmembers(env, predicate=inspect.ismethod) if not n.startswith("_")}
    assert public == {"reset", "get_reward"} | set(WORLD_TOOLS)
    method = env.travel_search_flights
    assert method.__name__ == "travel_search_flights"
    params = inspect.signature(method).parameters
    assert list(params)[:3] == ["origin", "destination", "date"] and params["cabin"].default is None
    assert "Args:" in (method.__doc__ or "") and "origin: Departure city." in (method.__doc__ or "")


def test_trl_schema_from_transformers_matches_the_tool_spec() -> None:
    utils = pytest.importorskip("transformers.utils")
    env = trl_environment_factory()()
    for spec in WORLD_TOOLS.tools:
        schema = utils.get_json_schema(getattr(env, spec.name))["function"]
        assert schema["name"] == spec.name
        assert set(schema["parameters"]["properties"]) == set(spec.properties)
        assert sorted(schema["parameters"].get("required", [])) == sorted(spec.required)


def test_trl_tool_methods_answer_coded_errors_instead_of_type_errors() -> None:
    env = trl_environment_factory()()
    assert env.reset(task_id="world-0-todo_add-1", prompt=[{"role": "user", "content": "x"}]) is None
    body = json.loads(env.todo_create(titel="Send invoices"))
    codes = [d["code"] for d in body["error"]["details"]]
    assert body["error"]["code"] == 400 and codes == ["redundant_parameter", "missing_required"]
    assert json.loads(env.weather_current(city=123))["error"]["details"][0]["code"] == "invalid_type"
    assert env.get_reward() == 0.0
    gold = WorldEnv()
    gold.reset("world-0-todo_add-1")
    (call,) = gold._gold().calls
    assert "error" not in json.loads(getattr(env, call.name)(**call.arguments))
    assert env.get_reward() == 1.0


def test_trl_dataset_rows_name_the_task_reset_reads() -> None:
    rows = world_dataset(seed=0)
    assert len(rows) == len(generate_tasks(0))
    row = rows[5]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "<tool_call>" not in row["prompt"][0]["content"]
    env = trl_environment_factory()()
    env.reset(**row)
    assert env._env._episode().task.id == row["task_id"]
    env._call("maps_geocode", {"city": "Paris"})
    assert env._env._episode().steps[-1].call == ToolCall(name="maps_geocode", arguments={"city": "Paris"})


def test_trl_factory_offers_only_the_named_tools() -> None:
    env = trl_environment_factory(tools=["todo_create", "todo_list"])()
    public = {n for n, _ in inspect.getmembers(env, predicate=inspect.ismethod) if not n.startswith("_")}
    assert public == {"reset", "get_reward", "todo_create", "todo_list"}
    # The full form is unchanged by a narrowed one made before it.
    assert hasattr(trl_environment_factory()(), "weather_current")
    with pytest.raises(ConfigError, match="no world tool named 'todo_creat'"):
        trl_environment_factory(tools=["todo_creat"])
    with pytest.raises(ConfigError, match="at least one tool"):
        trl_environment_factory(tools=[])
