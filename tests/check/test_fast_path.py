"""The generated fast path and the full checker agree on every schema and value (property test)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolmend._errors import SpecError
from toolmend._schema import Ref, ToolCall
from toolmend.check import Checker
from toolmend.check._checker import _Call, _full_check
from toolmend.check._spec import compile_parameters

KEYS = ["a", "b", "c"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.sampled_from([0.0, 2.0, 2.5, -1.5, 10.0]),
    st.sampled_from(["", "a", "ab", "abc", "12345", "x y", "A"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from([*KEYS, "d"]), inner, max_size=3)
    ),
    max_leaves=8,
)
TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    type_ = st.one_of(
        st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True)
    )
    extras = st.fixed_dictionaries(
        {},
        optional={
            "enum": st.lists(SCALARS, min_size=1, max_size=3),
            "const": SCALARS,
            "minimum": st.integers(0, 5),
            "maximum": st.integers(0, 5),
            "exclusiveMinimum": st.integers(0, 5),
            "exclusiveMaximum": st.integers(0, 5),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "b", "^[0-9]+$"]),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 2),
            "multipleOf": st.sampled_from([2, 5]),
            "nullable": st.booleans(),
        },
    )
    return st.builds(lambda t, e: {**({"type": t} if t else {}), **e}, st.one_of(st.none(), type_), extras)


def _schemas() -> st.SearchStrategy[Any]:
    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        obj = st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                **({"required": sorted(set(req))} if req else {}),
                **({} if extra is None else {"additionalProperties": extra}),
            },
            st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
            st.lists(st.sampled_from(KEYS), max_size=2),
            st.one_of(st.none(), st.booleans(), inner),
        )
        arr = st.builds(
            lambda items, prefix: {
                "type": "array",
                **({"items": items} if items is not None else {}),
                **({"prefixItems": prefix} if prefix else {}),
            },  # fmt: skip
            st.one_of(st.none(), st.booleans(), inner),
            st.lists(inner, max_size=2),
        )
        combos = st.builds(lambda k, parts: {k: parts}, st.sampled_from(["anyOf", "oneOf", "allOf"]),
                           st.lists(inner, min_size=1, max_size=3))  # fmt: skip
        return st.one_of(obj, arr, combos, st.builds(lambda s: {"not": s}, inner),
                         st.just({"$ref": "#/$defs/D"}), st.booleans())  # fmt: skip

    return st.recursive(_leaf(), extend, max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas(), _schemas(), VALUES, st.booleans())
def test_fast_path_agrees_with_full_checker(schema: Any, definition: Any, value: Any, required: bool) -> None:
    parameters = {
        "type": "object",
        "properties": {"v": schema},
        "required": ["v"] if required else [],
        "$defs": {"D": definition},
    }
    try:
        spec = compile_parameters("f", parameters)
    except SpecError:
        assume(False)
        return
    assume(spec.fast is not None)
    assert spec.fast is not None and spec.fast_unbound is not None
    args = {"v": value}
    full = _full_check(spec, _Call(0, "f", args, []), None)
    assert _fast_verdict(spec.fast, args) is (full == []), (parameters, value, full)
    assert _fast_verdict(spec.fast_unbound, args) is (full == []), (parameters, value, full)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from("abcdef"), _leaf(), min_size=5, max_size=6),
    st.lists(st.sampled_from("abcdef"), max_size=2),
    st.dictionaries(st.sampled_from("abcdefg"), VALUES, max_size=7),
)
def test_wide_closed_objects_agree(props: dict[str, Any], required: list[str], value: dict[str, Any]) -> None:
    """More than four optional properties: the fast path counts the keys it finds as it goes."""
    parameters = {"type": "object", "properties": props, "required": sorted(set(required))}
    try:
        spec = compile_parameters("f", parameters)
    except SpecError:
        assume(False)
        return
    assert spec.fast is not None and spec.fast_unbound is not None
    full = _full_check(spec, _Call(0, "f", value, []), None)
    assert _fast_verdict(spec.fast, value) is (full == []), (parameters, value, full)
    assert _fast_verdict(spec.fast_unbound, value) is (full == []), (parameters, value, full)


def _fast_verdict(fast: Any, args: Any) -> bool:
    """As the checker reads the fast path: an exception (a required key read with ``[]``) is a no."""
    try:
        return bool(fast(args))
    except Exception:
        return False


def test_refs_never_pass_the_fast_path() -> None:
    """A reference's cleanness depends on the call list, so only the full checker may judge it."""
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"x": {}, "o": {"type": "object"}}}}
    spec = compile_parameters("f", tool["parameters"])
    assert spec.fast is not None
    assert spec.fast({"x": 1, "o": {"k": [1]}})
    assert not spec.fast({"x": Ref(target="API_call_0")})
    assert not spec.fast({"o": {"k": [Ref(target="API_call_0")]}})
    # Where no call declares outputs, references are not bound and the full check ignores those
    # in free-form values: so does the test it then uses, which need not walk them.
    assert spec.fast_unbound is not None and spec.fast_unbound({"o": {"k": [Ref(target="API_call_0")]}})
    assert spec.fast_unbound({"x": Ref(target="API_call_0")})
    unbound = ToolCall(name="f", arguments={"o": {"k": [Ref(target="API_call_0")]}})
    assert Checker([tool]).check_call(unbound) == [] and Checker([tool]).check([unbound]) == []
    (f,) = Checker([tool]).check(
        [
            ToolCall(name="f", arguments={"o": {"k": Ref(target="API_call_3")}}),
            ToolCall(name="f", outputs=["API_call_3"]),
        ]
    )
    assert (f.code, f.path) == ("invalid_value", "o.k")


REF_LEAVES = st.one_of(
    st.just(Ref(target="API_call_0")), st.just({"$ref": "API_call_0"}), st.just({"$ref": 1})
)
CALL_VALUES = st.recursive(
    st.one_of(SCALARS, REF_LEAVES),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from([*KEYS, "d", "$ref"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _schemas(),
    _schemas(),
    st.dictionaries(st.sampled_from(["v", "w"]), CALL_VALUES, max_size=2),
    st.booleans(),
    st.sampled_from(["f", "g", "h", "F"]),
)
def test_check_arguments_agrees_with_check_call(
    schema: Any, definition: Any, args: dict[str, Any], required: bool, name: str
) -> None:
    """The peer-shaped entry (name and parsed arguments) gives check_call's findings, clean or
    not, for an offered tool ("f" with a generated schema, "g" a closed one, "h" taking
    anything) and for a name that is not offered ("F")."""
    parameters = {
        "type": "object",
        "properties": {"v": schema},
        "required": ["v"] if required else [],
        "$defs": {"D": definition},
    }
    tools = [
        {"name": "f", "parameters": parameters},
        {
            "name": "g",
            "parameters": {
                "type": "object",
                "properties": {"v": {"type": "integer"}},
                "additionalProperties": False,
            },
        },  # fmt: skip
        {"name": "h", "parameters": {"type": "object"}},
    ]
    try:
        checker = Checker(tools)
        checker.verify()
    except SpecError:
        assume(False)
        return
    for _ in range(2):  # the first call compiles nothing new; the second takes the cached test
        expected = checker.check_call(ToolCall(name=name, arguments=args), 3)
        assert checker.check_arguments(name, args, 3) == expected, (parameters, name, args, expected)


def test_check_arguments_before_and_after_compiling() -> None:
    """A tool compiled lazily by check_arguments itself, and a recursive one (never in the
    fast table), give check_call's findings."""
    recursive = {"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}},
                 "$defs": {"T": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/T"}]}}}}  # fmt: skip
    tools = [{"name": "r", "parameters": recursive}, {"name": "s", "parameters": {"type": "object",
             "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}}]  # fmt: skip
    for name, args in [("s", {"n": 2}), ("s", {"n": 0}), ("s", {}), ("r", {"t": [1, [2, [3]]]}),
                       ("r", {"t": [1, ["x"]]}), ("nope", {"n": 1})]:  # fmt: skip
        fresh = Checker(tools)  # nothing compiled: the first call compiles the tool
        expected = Checker(tools).check_call(ToolCall(name=name, arguments=args))
        assert fresh.check_arguments(name, args) == expected
        assert fresh.check_arguments(name, args) == expected
    (deep,) = Checker(tools).check_arguments("r", {"t": _deep(60)})  # past MAX_VALUE_DEPTH
    assert (deep.code, deep.data["keyword"]) == ("invalid_value", "depth")
    with pytest.raises(ValidationError, match="nested deeper"):  # as ToolCall refuses it
        Checker(tools).check_arguments("s", {"n": "x", "m": _deep(ToolCall.MAX_DEPTH + 5)})


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value
