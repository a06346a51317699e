"""The episode loop's reply reader and the state grading it relies on."""

from __future__ import annotations

import pytest

from toolmend._schema import Tool, ToolCall
from toolmend.env._validate import schema_findings
from toolmend.formats._tags import parse_tagged_calls
from toolmend.world import World, generate_tasks
from toolmend.world._episode import Episode, gold_replies, parse_reply
from toolmend.world._grading import answer_has, diff_state, gold_run, grade


@pytest.fixture(scope="module")
def tasks() -> list:
    return generate_tasks(0)


def test_fast_reply_reader_equals_the_lenient_one(tasks: list) -> None:
    variants = ["Sure.\n{reply}", "{reply}", "{reply}\n{reply}", "<think>x</think>{reply}", "{reply} {{oops"]
    for task in tasks[::7]:
        for reply in gold_replies(gold_run(task)):
            for form in variants:
                text = form.format(reply=reply)
                assert parse_reply(text).model_dump() == parse_tagged_calls(text).model_dump(), text
    for broken in [
        '<tool_call>{"name": "f", "arguments": {</tool_call>',
        '<tool_call>{"name": 1}</tool_call>',
        "[f()]",
        # Near misses of the direct reading: each must read exactly as the lenient reader does.
        '<tool_call>{"name": 5, "arguments": {}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": []}</tool_call>',
        '<tool_call>{"name": "f", "arguments": "{}"}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {}, "id": "c1"}</tool_call>',
        '<tool_call>{"name": "f"}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"x": {"$ref": "API_call_0"}}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"x": 1}, "arguments": {"y": 2}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"s": "\\ud800"}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"s": "</tool_call>"}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {}}',
        '<tool_call> x {"name": "f", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {}}</tool_call> then </tool_call>',
        '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>',
    ]:
        # repr: NaN is not equal to itself
        assert repr(parse_reply(broken).model_dump()) == repr(parse_tagged_calls(broken).model_dump()), broken


def test_episode_ids_pair_calls_with_their_answers(tasks: list) -> None:
    task = next(t for t in tasks if t.template == "finance_two_balances")
    gold = gold_run(task)
    for first in (gold_replies(gold)[0], "Checking.\n" + gold_replies(gold)[0] + "\n{"):  # direct and lenient
        ep = Episode(task, [])
        ep.observe(first)
        call_ids = [c.id for c in ep.messages[1].tool_calls]
        assert call_ids == [f"call_0_{k}" for k in range(len(call_ids))]
        assert [m.tool_call_id for m in ep.messages[2:]] == call_ids


def test_created_records_compare_by_content_not_by_fresh_id(tasks: list) -> None:
    task = next(t for t in tasks if t.template == "trip_flight_and_hotel")
    gold = gold_run(task)
    world = World.create(task.seed)
    env = world.environment(checker=None)
    order = [0, 1, 2, 4, 3, 5]  # the hotel booked first: it gets B0001
    for i in order:
        assert env.execute(task.calls[i]).ok
    assert world.state.bookings["B0001"].kind == "hotel"
    assert diff_state(World.create(task.seed).snapshot(), world.snapshot()) == gold.changes


def test_facts_need_the_answer_and_a_successful_result(tasks: list) -> None:
    task = next(t for t in tasks if t.template == "finance_two_balances")
    gold = gold_run(task)
    snapshot = World.create(task.seed).snapshot()
    assert grade(gold, snapshot, gold.answer, gold.results).success
    # The right values without having fetched them: no credit.
    assert not grade(gold, snapshot, gold.answer, []).facts_ok
    assert not grade(gold, snapshot, "I checked.", gold.results).facts_ok


def test_answer_matching_normalises_numbers_and_text() -> None:
    assert answer_has("about 1,234.5 USD", 1234.49)
    assert answer_has("you spent $131.61", -131.61)
    assert not answer_has("it is 19 °C", 21.3)
    assert answer_has("The file says: Passport, charger", "passport\ncharger")
    assert not answer_has("passport only", "passport\ncharger")


def test_budget_ends_an_episode_that_never_answers(tasks: list) -> None:
    task = tasks[0]
    episode = Episode(task, [], max_turns=2)
    call = ToolCall(name="maps_geocode", arguments={"city": "Paris"})
    assert not episode.observe(
        f'<tool_call>{{"name": "{call.name}", "arguments": {{"city": "Paris"}}}}</tool_call>'
    )
    assert episode.observe('<tool_call>{"name": "maps_geocode", "arguments": {"city": "Rome"}}</tool_call>')
    assert episode.answer is None and episode.done
    assert episode.observe("late answer") and episode.turns == 2


def test_schema_gate_gives_the_same_findings_with_its_fast_path() -> None:
    tool = Tool(
        name="f",
        parameters={
            "type": "object",
            "properties": {
                "d": {"type": "string", "pattern": r"^\d{4}$"},
                "n": {"type": "integer", "minimum": 1},
            },
            "required": ["d"],
        },
    )
    assert schema_findings(ToolCall(name="f", arguments={"d": "2025", "n": 3}), tool) == []
    bad = schema_findings(ToolCall(name="f", arguments={"d": "25", "n": 0}), tool)
    assert [(f.code, f.path) for f in bad] == [("invalid_format", "d"), ("invalid_value", "n")]
