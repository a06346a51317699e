from __future__ import annotations

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Ref, ToolCall
from toolmend.formats import parse_python_calls, write_python_calls


def test_list_with_dotted_names_and_nested_literals() -> None:
    r = parse_python_calls("[f(a=1), mod.sub.g(b=[1, 2], c={'k': (3, -4.5)}, d=None, e=True)]")
    assert r.ok and r.format == "python" and r.findings == []
    assert r.calls == [
        ToolCall(name="f", arguments={"a": 1}),
        ToolCall(name="mod.sub.g", arguments={"b": [1, 2], "c": {"k": [3, -4.5]}, "d": None, "e": True}),
    ]


def test_positional_arguments_are_kept_and_reported() -> None:
    r = parse_python_calls("[calc_area(10, 5, unit='cm')]")
    assert r.calls[0].arguments == {"unit": "cm"}
    assert r.extras[0]["positional_args"] == [10, 5]
    pos = [f for f in r.findings if f.code == "positional_argument"]
    assert [(f.call, f.data["index"], f.data["source"]) for f in pos] == [(0, 0, "10"), (0, 1, "5")]


def test_non_literals_are_findings_with_their_source_text() -> None:
    r = parse_python_calls("[f(x=2*3, y=some_var, z=math.pi, w=-1, v=g(1), u=h(k=2), t=true)]")
    args = r.calls[0].arguments
    assert args["w"] == -1  # a negative number is a literal
    assert args["x"] == 6  # computed by the safe arithmetic reader, never eval
    assert args["y"] == "some_var" and args["z"] == "math.pi"
    assert args["v"] == "g(1)" and args["u"] == {"h": {"k": 2}}
    assert args["t"] is True
    by_path = {f.path: f for f in r.findings}
    assert set(by_path) == {"x", "y", "z", "v", "u", "t"}
    assert all(f.code == "invalid_value" for f in r.findings)
    assert by_path["x"].data == {"source": "2*3", "value": 6}
    assert by_path["y"].data["source"] == "some_var"


def test_huge_powers_are_not_computed() -> None:
    r = parse_python_calls("[f(x=9**9**9)]")
    assert r.calls[0].arguments == {"x": "9**9**9"}


def test_single_call_without_brackets_and_one_call_per_line() -> None:
    assert parse_python_calls("get_time(tz='UTC')").calls == [
        ToolCall(name="get_time", arguments={"tz": "UTC"})
    ]
    r = parse_python_calls("cd(folder='ws')\nmv(source='a.txt', destination='b')")
    assert [c.name for c in r.calls] == ["cd", "mv"] and r.findings == []


def test_fences_and_chatter() -> None:
    r = parse_python_calls("Here you go:\n```python\n[get_weather(city='Paris')]\n```")
    assert [c.name for c in r.calls] == ["get_weather"]
    assert [f.code for f in r.findings] == ["redundant_information"]
    assert r.text == "Here you go:"


def test_a_call_mentioned_inside_a_sentence_is_not_a_call() -> None:
    r = parse_python_calls("You could use get_weather(city) to find out.")
    assert r.calls == [] and r.findings == [] and r.format == "none"


def test_broken_and_cut_off_lists_are_invalid_format() -> None:
    assert [f.code for f in parse_python_calls("[f(a=1), g(b=]").findings] == ["invalid_format"]
    cut = parse_python_calls("[f(a=1), g(b='x")
    assert cut.calls == [] and [f.code for f in cut.findings] == ["invalid_format"]


def test_unpacking_repeats_and_bad_callees() -> None:
    r = parse_python_calls("[f(*xs, a=1, a=2, **kw)]")
    assert r.calls[0].arguments == {"a": 2}
    assert [f.code for f in r.findings] == ["invalid_format"] * 3
    bad = parse_python_calls("[fs[0](a=1)]")
    assert bad.calls == [] and [f.code for f in bad.findings] == ["invalid_format"]


def test_writer() -> None:
    calls = [
        ToolCall(
            name="a.b", arguments={"s": "it's", "n": -2, "l": [1.5, None], "r": Ref(target="API_call_0")}
        )
    ]
    text = write_python_calls(calls)
    assert text == "[a.b(s=\"it's\", n=-2, l=[1.5, None], r={'$ref': 'API_call_0'})]"
    assert parse_python_calls(text).calls == calls
    assert write_python_calls(calls, brackets=False).startswith("a.b(")


@pytest.mark.parametrize(
    "call",
    [
        ToolCall(name="get-weather"),
        ToolCall(name="f", arguments={"class": 1}),
        ToolCall(name="f", arguments={"a": float("nan")}),
    ],
)
def test_writer_refuses_what_python_syntax_cannot_say(call: ToolCall) -> None:
    with pytest.raises(ConfigError):
        write_python_calls([call])
