"""References between calls: ``refs``, ``resolve`` and ``dependencies`` (the one walker every
consumer uses), and where a ``{"$ref": ...}`` object is a call reference at all."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolmend import Checker, Ref, ToolCall, repair
from toolmend._schema import REFS, UnresolvedRef, dependencies, refs, resolve
from toolmend.env import Environment
from toolmend.formats import parse_calls, to_openai_tool_calls
from toolmend.guard import Guard, Turn

STRING_TOOL = {
    "name": "f",
    "parameters": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
}
FREE_TOOL = {"name": "g", "parameters": {"type": "object", "properties": {"o": {"type": "object"}}}}


def test_refs_walks_dicts_lists_and_tuples_in_order_with_locations() -> None:
    a, b, c = Ref(target="API_call_0"), Ref(target="API_call_1.items.0"), Ref(target="x")
    value = {"p": a, "q": [1, {"r": b}], "t": (c,), "lit": {"$ref": "API_call_2"}}
    assert list(refs(value)) == [(("p",), a), (("q", 1, "r"), b), (("t", 0), c)]
    assert [r.head for _, r in refs(value)] == ["API_call_0", "API_call_1", "x"]
    assert list(refs("API_call_0")) == [] and list(refs(a, ("k",))) == [(("k",), a)]


def test_resolve_whole_targets_then_field_paths() -> None:
    bindings: dict[str, Any] = {"API_call_0": {"flights": [{"id": "F1"}]}, "API_call_0.x": "whole"}
    value = {"a": Ref(target="API_call_0.flights.0.id"), "b": [Ref(target="API_call_0.x")], "c": (1,)}
    assert resolve(value, bindings) == {"a": "F1", "b": ["whole"], "c": [1]}
    assert value["a"] == Ref(target="API_call_0.flights.0.id")  # the input is not changed


@pytest.mark.parametrize(
    ("target", "head", "path"),
    [
        ("API_call_9", "API_call_9", ""),
        ("API_call_0.nope", "API_call_0", "nope"),
        ("API_call_0.flights.5", "API_call_0", "flights.5"),
    ],
)
def test_resolve_names_what_is_unbound(target: str, head: str, path: str) -> None:
    with pytest.raises(UnresolvedRef) as info:
        resolve({"x": [Ref(target=target)]}, {"API_call_0": {"flights": []}})
    assert (info.value.target, info.value.path) == (head, path)
    assert isinstance(info.value, KeyError)  # callers that catch lookups keep working


def test_resolve_with_a_function_decides_per_reference() -> None:
    value = {"a": Ref(target="API_call_0"), "b": [2, Ref(target="API_call_1")]}
    assert resolve(value, lambda ref: ref.target) == {"a": "API_call_0", "b": [2, "API_call_1"]}
    assert resolve(value, lambda ref: ref.model_dump()) == {
        "a": {"$ref": "API_call_0"},
        "b": [2, {"$ref": "API_call_1"}],
    }


def test_dependencies_direct_transitive_and_through_state() -> None:
    calls = [
        ToolCall(name="a", outputs=["API_call_0"]),
        ToolCall(name="b", arguments={"x": Ref(target="API_call_0.id")}, outputs=["API_call_1"]),
        ToolCall(name="c", arguments={"y": [{"z": Ref(target="API_call_1")}]}),
        ToolCall(name="d", arguments={"w": Ref(target="API_call_7")}),  # nobody declares it
        ToolCall(name="e", arguments={"v": Ref(target="API_call_2")}, outputs=["API_call_2"]),  # its own
    ]
    assert dependencies(calls) == [set(), {0}, {1}, set(), set()]
    assert dependencies(calls, transitive=True) == [set(), {0}, {0, 1}, set(), set()]
    assert dependencies(calls, after={3: [2]}) == [set(), {0}, {1}, {2}, set()]
    assert dependencies(calls, after={3: [2]}, transitive=True)[3] == {0, 1, 2}


def test_environment_and_resolve_agree() -> None:
    env = Environment(tools=[])
    env.bindings.update({"API_call_0": {"id": 7}})
    call = ToolCall(name="f", arguments={"x": Ref(target="API_call_0.id"), "y": Ref(target="API_call_3")})
    assert env.resolved(call) is None
    ok = call.model_copy(update={"arguments": {"x": call.arguments["x"]}})
    resolved = env.resolved(ok)
    assert resolved is not None and resolved.arguments == resolve(ok.arguments, env.bindings) == {"x": 7}


# -- where a {"$ref": ...} object is a call reference ------------------------------------------


def test_a_ref_object_as_the_arguments_themselves_is_data() -> None:
    # It used to become a Ref where a dict was needed: pydantic's ValidationError.
    assert ToolCall(name="f", arguments={"$ref": "a"}).arguments == {"$ref": "a"}
    assert ToolCall.model_validate_json('{"name": "f", "arguments": {"$ref": "a"}}').arguments == {
        "$ref": "a"
    }
    assert Checker([FREE_TOOL]).check_arguments("g", {"$ref": "a"})[0].code == "redundant_parameter"


def test_an_echoed_schema_ref_in_a_plain_call_is_checked_as_the_object_it_is() -> None:
    checker = Checker([STRING_TOOL])
    (f,) = checker.check_arguments("f", {"s": {"$ref": "#/$defs/X"}})
    assert (f.code, f.path) == ("invalid_type", "s")
    (g,) = checker.check([{"name": "f", "arguments": {"s": {"$ref": "API_call_0"}}}])
    assert g.code == "invalid_type"
    # An explicit Ref is still a reference.
    assert checker.check_call(ToolCall(name="f", arguments={"s": Ref(target="API_call_0")})) == []


def test_repair_keeps_free_form_ref_objects_literal() -> None:
    result = repair([{"name": "g", "arguments": {"o": {"$ref": "#/$defs/X"}}}], [FREE_TOOL])
    (call,) = result.calls
    assert call.arguments == {"o": {"$ref": "#/$defs/X"}} and list(refs(call.arguments)) == []
    (wire,) = to_openai_tool_calls(result.calls)
    assert json.loads(wire["function"]["arguments"]) == {"o": {"$ref": "#/$defs/X"}}


def test_a_native_call_through_the_guard_is_plain() -> None:
    turn = Turn.from_openai({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"s": {"$ref": "API_call_0"}}'}},
    ]})  # fmt: skip
    decision = Guard(Checker([STRING_TOOL])).decide(turn)
    assert decision.action != "accept" and "invalid_type" in decision.codes


def test_formats_of_nested_calls_and_toolmend_files_read_references() -> None:
    chain = '[{"api_name": "a", "parameters": {}, "responses": ["API_call_0"]}, {"api_name": "b", "parameters": {"x": "API_call_0"}}]'
    assert parse_calls(chain, "nestools").calls[1].arguments == {"x": Ref(target="API_call_0")}
    tagged = '<tool_call>{"name": "b", "arguments": {"x": {"$ref": "API_call_0"}}}</tool_call>'
    assert parse_calls(tagged, "tags").calls[0].arguments == {"x": Ref(target="API_call_0")}
    data = {"name": "b", "arguments": {"x": {"$ref": "API_call_0"}}}
    assert ToolCall.model_validate(data, context=REFS).arguments == {"x": Ref(target="API_call_0")}
    assert ToolCall.model_validate(data).arguments == {"x": {"$ref": "API_call_0"}}
