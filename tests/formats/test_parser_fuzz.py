"""Any input yields a ParseResult with known finding codes — never an exception (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_formats import TAG_SAFE_TEXT, calls

from toolmend._schema import ERROR_CODES, ToolCall
from toolmend.formats import ParseResult, parse_calls, parse_openai_message, write_calls

FORMATS = ["auto", "openai", "json", "python", "tags", "nestools"]
SETTINGS = settings(max_examples=80, deadline=None)
NEAR = st.text(alphabet="{}[]()\"':,=<>/\\ \n`abcnmeAPI_l0123456789.-tTfF", max_size=60)
TAGGY = st.lists(
    st.sampled_from(
        [
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            "<reflect>",
            "</reflect>",
            "<final>",
            "</final>",
            "<call>",
            "</call>",
            '{"name": "f", "arguments": {',
            "}",
            "[f(a=1",
            ")]",
            "```json\n",
            "```",
            "\n",
            "text ",
        ]
    ),
    max_size=12,
).map("".join)


def _sane(r: ParseResult) -> None:
    assert isinstance(r, ParseResult)
    assert len(r.extras) == len(r.calls)
    for f in r.findings:
        assert f.code in ERROR_CODES
        assert "internal_error" not in f.data, f.message
        assert f.call is None or 0 <= f.call < len(r.calls)


@SETTINGS
@given(st.text(max_size=200), st.sampled_from(FORMATS))
def test_arbitrary_text(text: str, fmt: str) -> None:
    _sane(parse_calls(text, fmt))  # type: ignore[arg-type]


@SETTINGS
@given(NEAR, st.sampled_from(FORMATS))
def test_near_json_and_near_python(text: str, fmt: str) -> None:
    _sane(parse_calls(text, fmt))  # type: ignore[arg-type]


@SETTINGS
@given(TAGGY)
def test_tag_soup(text: str) -> None:
    _sane(parse_calls(text))
    _sane(parse_calls(text, "tags"))


@settings(max_examples=40, deadline=None)
@given(
    calls(text=TAG_SAFE_TEXT),
    st.sampled_from(["openai", "json", "python", "tags", "nestools"]),
    st.data(),
)
def test_truncated_outputs_are_never_clean(cs: list[ToolCall], fmt: str, data: st.DataObject) -> None:
    full = write_calls(cs, fmt)  # type: ignore[arg-type]
    cut = data.draw(st.integers(min_value=0, max_value=len(full) - 1))
    text = full[:cut]
    for mode in (fmt, "auto"):
        r = parse_calls(text, mode)  # type: ignore[arg-type]
        _sane(r)
        if full[cut:].strip():
            # Losing real characters must show: no clean parse that looks like the whole output.
            assert not (
                r.ok and [(c.name, c.arguments) for c in r.calls] == [(c.name, c.arguments) for c in cs]
            )


@SETTINGS
@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_openai_message_of_any_shape(message: object) -> None:
    shaped = {"role": "assistant", "tool_calls": message} if not isinstance(message, dict) else message
    _sane(parse_openai_message(shaped))


def test_pathological_inputs() -> None:
    for text in [
        "[" * 5000,
        "{" * 5000 + "}" * 5000,
        "(" * 3000,
        "f(" * 2000,
        "'" * 999,
        "<think>" * 500,
        "[f(a=" + "[" * 1000 + "])]",
        '{"name": "f", "arguments": ' + "[" * 3000 + "]" * 3000 + "}",
        "x" * 100_000,
        "\x00\ud7ff\ufffe",
    ]:
        for fmt in FORMATS:
            _sane(parse_calls(text, fmt))  # type: ignore[arg-type]


def test_tool_calls_of_a_cut_off_openai_message_are_flagged() -> None:
    # Found by the truncation property: a message missing only its final brace parsed clean.
    calls = [ToolCall(name="a", arguments={"k": 1}), ToolCall(name="b", arguments={"x": {"": None}})]
    text = write_calls(calls, "openai")[:-1]
    result = parse_calls(text, "auto")
    assert [c.name for c in result.calls] == ["a", "b"]
    assert not result.ok
    assert "cut off" in " ".join(f.message for f in result.findings if f.code == "invalid_format")
