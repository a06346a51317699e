"""The BFCL reply decoder: prompting-mode Python syntax, FC-mode JSON, outcome classes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._schema import ToolCall
from toolmend.benchmarks.bfcl._decode import (
    classify_output,
    decode,
    decode_python,
    is_call_list,
    is_empty_output,
    render_fc,
    render_openai,
    render_python,
)


def calls(text: str, mode: str = "compat") -> object:
    result = decode(text, mode)  # type: ignore[arg-type]
    return result.calls if result.ok else None


def test_plain_list_and_single_call() -> None:
    assert calls("[f(a=1), g(b='x')]") == [{"f": {"a": 1}}, {"g": {"b": "x"}}]
    assert calls("f(a=1)") == [{"f": {"a": 1}}]


def test_backticks_newlines_and_spaces_are_stripped_at_the_ends() -> None:
    assert calls("```\n[f(a=1)]\n```") == [{"f": {"a": 1}}]
    # A language tag is not stripped, so the decode fails as it does in BFCL.
    assert calls("```python\n[f(a=1)]\n```") is None


def test_wrapping_single_quotes_come_too_late_to_help() -> None:
    # BFCL strips wrapping quotes only after adding the brackets, so a quoted call list is a
    # list holding a string, which fails to decode.
    assert calls("'f(a=1)'") is None
    assert calls("'[f(a=1)]'") is None


def test_missing_brackets_are_added() -> None:
    assert decode_python("[f(a=1)") == [{"f": {"a": 1}}]
    assert decode_python("f(a=1)]") == [{"f": {"a": 1}}]
    assert decode_python("") == []


def test_dotted_names_and_nested_calls() -> None:
    assert calls("[math.stats.mean(xs=[1, 2])]") == [{"math.stats.mean": {"xs": [1, 2]}}]
    assert calls("[f(x=g(y=1), z=h(2))]") == [{"f": {"x": {"g": {"y": 1}}, "z": "h(2)"}}]


def test_positional_arguments_are_dropped() -> None:
    assert calls("[f(1, 2, a=3)]") == [{"f": {"a": 3}}]


def test_value_kinds() -> None:
    decoded = calls("[f(a=-2, b=None, c=(1, 2), d={'k': [True]}, e=x, s=a[1], t=..., u=2**3)]")
    assert decoded == [
        {
            "f": {
                "a": -2,
                "b": None,
                "c": (1, 2),
                "d": {"k": [True]},
                "e": "x",
                "s": "a[1]",
                "t": "...",
                "u": 8,
            }
        }
    ]


def test_arithmetic_is_computed_without_eval() -> None:
    assert calls("[f(x=0.1+0.2)]") == [{"f": {"x": 0.1 + 0.2}}]
    assert calls("[f(x='ab'+'c', y=[1]+[2], z=2*-3)]") == [{"f": {"x": "abc", "y": [1, 2], "z": -6}}]
    # BFCL would eval these; we refuse names, calls and runaway sizes.
    assert calls("[f(x=y*2)]") is None
    assert calls("[f(x=__import__('os').getcwd()+'')]") is None
    assert calls("[f(x=10**10**10)]") is None
    assert calls("[f(x='a'*10**9)]") is None
    assert calls("[f(x=1/0)]") is None
    assert calls("[f(x=lambda: 1)]") is None


def test_unary_quirk_in_compat_fixed_in_improved() -> None:
    assert calls("[f(x=+5)]", "compat") == [{"f": {"x": -5}}]
    assert calls("[f(x=+5)]", "improved") == [{"f": {"x": 5}}]
    assert calls("[f(x=-(-5))]", "compat") is None
    assert calls("[f(x=-(-5))]", "improved") == [{"f": {"x": 5}}]


@pytest.mark.parametrize(
    "text",
    ["Sorry, I can't do that.", "[1, 2]", "[f(a=1)] + [g()]", "[f(x={1, 2})]", "[f(a=1", "f(b={**c})"],
)
def test_decode_failures(text: str) -> None:
    assert calls(text) is None


def test_empty_output_is_a_successful_decode() -> None:
    result = decode("[]")
    assert result.ok and result.calls == [] and is_empty_output(result.calls)


def test_fc_forms() -> None:
    tc = [ToolCall(name="a.b", arguments={"x": 1.0, "y": ["z"]}), ToolCall(name="c", arguments={})]
    expected = [{"a.b": {"x": 1.0, "y": ["z"]}}, {"c": {}}]
    for text in (render_fc(tc), render_openai(tc)):
        result = decode(text)
        assert (result.calls, result.style, result.well_formed) == (expected, "fc", True)
    message = json.dumps({"role": "assistant", "tool_calls": json.loads(render_openai(tc))})
    assert decode(message).calls == expected
    assert decode('[{"f": {"a": 1}}]').calls == [{"f": {"a": 1}}]


def test_fc_bad_arguments() -> None:
    assert not decode('[{"f": "{not json"}]').ok
    wrong_shape = decode('[{"f": "[1, 2]"}]')
    assert wrong_shape.ok and not wrong_shape.well_formed


def test_render_python_round_trip() -> None:
    tc = [ToolCall(name="m.f", arguments={"s": 'it\'s "q"', "n": -1.5e-7, "d": {"k": [None, True]}})]
    assert decode(render_python(tc)).calls == [{"m.f": tc[0].arguments}]


def test_is_call_list() -> None:
    assert is_call_list([{"f": {}}])
    assert not is_call_list([{"f": {}, "g": {}}])
    assert not is_call_list([{"f": 1}])
    assert not is_call_list({"f": {}})


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("[]", "abstained"),
        ("", "abstained"),
        ("[get_weather(city='Paris')]", "call"),
        ("The functions cannot answer that question.", "text"),
        ("<tool_call>{'name': 'get_weather'", "malformed"),
        ('{"name": "get_weather", "arguments": {"city": "Paris"', "malformed"),
        ("I would call get_weather( for Paris", "malformed"),
        ("Use weather.get(city = 'Paris') then", "malformed"),
        ('[{"f": "[1]"}]', "malformed"),
    ],
)
def test_classify_output(text: str, outcome: str) -> None:
    assert classify_output(text, decode(text), ["get_weather"]) == outcome


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_decode_never_raises(text: str) -> None:
    result = decode(text)
    assert result.ok or result.error
    classify_output(text, result, ["f"])


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="[](){}=,.'\"+-*/ abcf0123456789_\n`", max_size=80),
)
def test_decode_never_raises_on_call_like_text(text: str) -> None:
    for mode in ("compat", "improved"):
        result = decode(text, mode)  # type: ignore[arg-type]
        assert result.ok or result.error
