from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from toolmend._schema import ERROR_CODES, Finding, Message, Ref, Sample, Tool, ToolCall, Trajectory

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5).filter(lambda k: k != "$ref"), inner, max_size=3)
    ),
    max_leaves=10,
)


def test_error_codes_are_exactly_the_checklist() -> None:
    assert set(ERROR_CODES) == {
        "wrong_tool_name",
        "missing_required",
        "invalid_type",
        "empty_value",
        "redundant_parameter",
        "invalid_format",
        "redundant_information",
        "wrong_tool_count",
        "invalid_value",
        "positional_argument",
        "duplicate_call",
    }


def test_tool_required_and_properties() -> None:
    tool = Tool(
        name="f", parameters={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    )
    assert tool.required == ["a"]
    assert tool.properties == {"a": {"type": "string"}}
    assert Tool(name="g").required == []


def test_refs_survive_a_json_round_trip() -> None:
    call = ToolCall(
        name="book",
        arguments={"flight": Ref(target="API_call_0"), "extras": [Ref(target="API_call_1"), "bag"]},
        outputs=["API_call_2"],
    )
    again = ToolCall.model_validate_json(call.model_dump_json())
    assert again == call
    assert isinstance(again.arguments["flight"], Ref)
    assert json.loads(call.model_dump_json())["arguments"]["flight"] == {"$ref": "API_call_0"}


@given(st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4))
def test_arguments_round_trip(arguments: dict[str, object]) -> None:
    call = ToolCall(name="f", arguments=arguments)
    assert ToolCall.model_validate_json(call.model_dump_json()) == call


def test_trajectory_pairs_calls_with_responses_by_id_then_position() -> None:
    a = ToolCall(name="a", id="1")
    b = ToolCall(name="b", id="2")
    c = ToolCall(name="c")
    traj = Trajectory(
        messages=[
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=[a, b]),
            Message(role="tool", content="B", tool_call_id="2"),
            Message(role="tool", content="A", tool_call_id="1"),
            Message(role="assistant", tool_calls=[c]),
        ]
    )
    assert traj.calls == [a, b, c]
    steps = traj.steps()
    assert [(call.name, resp.content if resp else None) for call, resp in steps] == [
        ("a", "A"),
        ("b", "B"),
        ("c", None),
    ]


def test_sample_tool_lookup_and_finding_defaults() -> None:
    sample = Sample(id="s", tools=[Tool(name="x")])
    assert sample.tool("x") is not None and sample.tool("y") is None
    f = Finding(code="missing_required", message="m", call=0, path="a")
    assert f.suggestion is None and f.data == {}
