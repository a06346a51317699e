"""BFCL's AST checker, re-implemented: same verdicts, same ``error_type`` labels.

The checks run in BFCL's order and stop at the first failure:

1. function name (exact; ``underscore_to_dot`` compares against the name with dots turned into
   underscores, for models whose API forbids dots) → ``simple_function_checker:wrong_func_name``
2. every schema-required parameter present → ``simple_function_checker:missing_required``
3. for each supplied parameter, in the model's order:

   - it must be in the schema *and* in the possible answer → ``...:unexpected_param``
   - type (int is accepted for ``float``; float is not for ``integer``; ``bool`` is not ``int``;
     tuples count as lists for ``tuple``; list items checked one level deep; a value of the
     answer's own type is accepted when the answer disagrees with the schema — the "variable"
     escape hatch) → ``type_error:simple`` / ``type_error:nested``
   - value: strings after :func:`~toolmend.compare._values.normalize_bfcl_string`, lists element
     by element in order, dicts one level deep, lists of dicts in order, everything else by
     ``==`` → ``value_error:string|list/tuple|dict_key|dict_value|list_dict_count|others``
4. every answer parameter whose acceptable values lack ``""`` present →
   ``simple_function_checker:missing_optional``

Parallel categories match calls to answers without regard to order: ``compat`` does it BFCL's
way (each answer, in gold order, takes the first unused call that passes — greedy, so it can miss
a valid assignment), ``improved`` finds a perfect matching whenever one exists
(:func:`scipy.optimize.linear_sum_assignment` over the pass/fail matrix).

Where BFCL would crash on a shape its data never has (a schema without ``items``, an acceptable
value that is not a list), this module fails the check instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from pydantic import BaseModel, Field
from scipy.optimize import linear_sum_assignment

from toolmend._schema import Tool
from toolmend.benchmarks._base import Mode
from toolmend.compare._values import normalize_bfcl_string

__all__ = [
    "CheckResult",
    "ast_check",
    "bfcl_type",
    "multiple_check",
    "parallel_check",
    "simple_check",
]

Answer = dict[str, dict[str, list[Any]]]
"""One possible-answer entry: ``{function_name: {param: [acceptable values]}}``."""

_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
    # JSON-Schema names, for tools that did not come from BFCL files.
    "number": float,
    "object": dict,
}
_NESTED = ("array", "tuple")


class CheckResult(BaseModel):
    """A checker verdict in BFCL's shape (``error`` items are strings or per-candidate dicts)."""

    valid: bool
    error: list[Any] = Field(default_factory=list)
    error_type: str = ""


_OK = CheckResult(valid=True)


def _fail(error_type: str, *messages: Any) -> CheckResult:
    return CheckResult(valid=False, error=list(messages), error_type=error_type)


def bfcl_type(schema: Any) -> str | None:
    """The BFCL type name of a parameter schema loaded by :func:`toolmend.formats.load_tool`.

    >>> bfcl_type({"type": "number", "x-original-type": "float"})
    'float'
    """
    if not isinstance(schema, dict):
        return None
    original = schema.get("x-original-type")
    kind = original if isinstance(original, str) else schema.get("type")
    return kind if isinstance(kind, str) else None


def _answer_type(acceptable: Sequence[Any]) -> type | None:
    for value in acceptable:
        if value != "":
            return type(value)
    return None


def _type_check(
    param: str, value: Any, acceptable: Any, expected: type, nested: type | None
) -> tuple[CheckResult, bool]:
    """BFCL's type checker: (verdict, is_variable)."""
    acceptable = acceptable if isinstance(acceptable, list) else [acceptable]
    answer_type = _answer_type(acceptable)
    is_variable = answer_type is not None and answer_type is not expected
    nested_error: str | None = None
    if type(value) is expected:
        if nested is None:
            return _OK, is_variable
        for candidate in acceptable:
            # A candidate that is not a list (the "" of an optional parameter) passes as is.
            if type(candidate) is not list or all(
                _type_check(param, item, candidate, nested, None)[0].valid for item in cast(list[Any], value)
            ):
                return _OK, is_variable
        nested_error = f"parameter {param!r}: items of {value!r} are not all {nested.__name__}"
    if answer_type is not None and type(value) is answer_type:
        if nested_error is not None:
            return _fail("type_error:nested", nested_error), True
        return _OK, True
    simple = f"parameter {param!r}: expected {expected.__name__}, got {type(value).__name__} ({value!r})"
    messages = [nested_error, simple] if nested_error else [simple]
    return _fail("type_error:simple", *messages), is_variable


def _norm(value: Any) -> Any:
    return normalize_bfcl_string(value) if type(value) is str else value


def _string_check(param: str, value: str, acceptable: list[Any]) -> CheckResult:
    allowed = [normalize_bfcl_string(a) for a in acceptable if type(a) is str]
    if normalize_bfcl_string(value) in allowed:
        return _OK
    return _fail(
        "value_error:string", f"parameter {param!r}: {value!r} is none of {acceptable!r} (case-insensitive)"
    )


def _list_check(param: str, value: list[Any], acceptable: list[Any]) -> CheckResult:
    model = [_norm(v) for v in value]
    # A "" candidate reads as an empty list, as in BFCL.
    allowed = [[_norm(v) for v in a] for a in acceptable if isinstance(a, list | tuple | str)]
    if model in allowed:
        return _OK
    return _fail("value_error:list/tuple", f"parameter {param!r}: {value!r} is none of {acceptable!r}")


def _dict_check(param: str, value: Any, acceptable: list[Any]) -> CheckResult:
    result = _fail("dict_checker:unclear")
    for candidate in acceptable:
        if candidate == "":
            continue
        if not isinstance(candidate, dict) or not isinstance(value, dict):
            result = _fail(
                "dict_checker:unclear", f"parameter {param!r}: cannot compare {value!r} with {candidate!r}"
            )
            continue
        errors: list[str] = []
        error_type = "dict_checker:unclear"
        for key, item in value.items():
            if key not in candidate:
                errors.append(f"unexpected dict key {key!r}")
                error_type = "value_error:dict_key"
                break
            options = candidate[key] if isinstance(candidate[key], list) else [candidate[key]]
            allowed = [_norm(o) for o in options]
            if _norm(item) not in allowed:
                errors.append(f"dict key {key!r}: {item!r} is none of {allowed!r}")
                error_type = "value_error:dict_value"
                break
        # BFCL runs the missing-key pass even after a failure above; the last label wins.
        for key, options in candidate.items():
            if key not in value and "" not in (options if isinstance(options, list) else [options]):
                errors.append(f"missing dict key {key!r}")
                error_type = "value_error:dict_key"
                break
        if not errors:
            return _OK
        result = _fail(error_type, *errors)
    return result


def _list_dict_check(param: str, value: list[Any], acceptable: list[Any]) -> CheckResult:
    result = _fail("list_dict_checker:unclear")
    for candidate in acceptable:
        if not isinstance(candidate, list | str) or len(value) != len(candidate):
            result = _fail("value_error:list_dict_count", f"parameter {param!r}: wrong number of dicts")
            continue
        passed = True
        for item, expected in zip(value, candidate, strict=True):
            result = _dict_check(param, item, [expected])
            if not result.valid:
                passed = False
                break
        if passed:
            return _OK
    return result


def _check_param(param: str, value: Any, schema: dict[str, Any], acceptable: Any) -> CheckResult:
    type_name = bfcl_type(schema)
    expected = _PY_TYPES.get(type_name) if type_name else None
    acceptable = acceptable if isinstance(acceptable, list) else [acceptable]
    is_variable = False
    nested: type | None = None
    if expected is not None:
        if type_name in _NESTED:
            nested = _PY_TYPES.get(bfcl_type(schema.get("items")) or "")
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name in ("float", "number") and type(value) is int:
            value = float(value)
        verdict, is_variable = _type_check(param, value, acceptable, expected, nested)
        if not verdict.valid:
            return verdict
        if not is_variable:
            if expected is dict:
                return _dict_check(param, value, acceptable)
            if expected is list and nested is dict:
                return _list_dict_check(param, value, acceptable)
            if expected is str:
                return _string_check(param, value, acceptable)
            if expected is list:
                return _list_check(param, value, acceptable)
    if value not in acceptable:
        return _fail("value_error:others", f"parameter {param!r}: {value!r} is none of {acceptable!r}")
    return _OK


def simple_check(
    tool: Tool, call: dict[str, Any], answer: Answer, *, underscore_to_dot: bool = False
) -> CheckResult:
    """BFCL's ``simple_function_checker``: one decoded call against one possible answer.

    >>> t = Tool(name="area", parameters={"type": "object", "properties": {
    ...     "base": {"type": "integer"}}, "required": ["base"]})
    >>> simple_check(t, {"area": {"base": 10}}, {"area": {"base": [10]}}).valid
    True
    >>> simple_check(t, {"area": {"base": 1.5}}, {"area": {"base": [10]}}).error_type
    'type_error:simple'
    """
    acceptable = next(iter(answer.values()), {})
    name = tool.name
    if underscore_to_dot and "." in name:
        name = re.sub(r"\.", "_", name)
    if name not in call:
        return _fail("simple_function_checker:wrong_func_name", f"function {name!r} not found in the output")
    params = call[name]
    if not isinstance(params, dict):
        return _fail("simple_function_checker:unclear", f"arguments of {name!r} are not an object")
    for required in tool.required:
        if required not in params:
            return _fail(
                "simple_function_checker:missing_required", f"missing required parameter {required!r}"
            )
    properties = tool.properties
    for param, value in params.items():
        if param not in properties or param not in acceptable:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {param!r}")
        verdict = _check_param(param, value, properties[param], acceptable[param])
        if not verdict.valid:
            return verdict
    for param, options in acceptable.items():
        if param not in params and "" not in (options if isinstance(options, list) else [options]):
            return _fail(
                "simple_function_checker:missing_optional",
                f"parameter {param!r} is optional in the schema but required by the answer",
            )
    return _OK


def _find_tool(tools: Sequence[Tool], name: str) -> Tool:
    # BFCL would crash on an answer naming no offered tool; an empty tool fails every parameter.
    return next((t for t in tools if t.name == name), Tool(name=name))


def _expected_name(answer: Answer) -> str:
    return next(iter(answer), "")


def multiple_check(
    tools: Sequence[Tool],
    calls: Sequence[dict[str, Any]],
    answers: Sequence[Answer],
    *,
    underscore_to_dot: bool = False,
) -> CheckResult:
    """BFCL's ``multiple_function_checker``: one call, checked against the expected tool."""
    if len(calls) != len(answers):
        return _fail("multiple_function_checker:wrong_count", "wrong number of functions")
    if not answers:
        return _OK
    tool = _find_tool(tools, _expected_name(answers[0]))
    return simple_check(tool, calls[0], answers[0], underscore_to_dot=underscore_to_dot)


def parallel_check(
    tools: Sequence[Tool],
    calls: Sequence[dict[str, Any]],
    answers: Sequence[Answer],
    mode: Mode = "compat",
    *,
    underscore_to_dot: bool = False,
) -> CheckResult:
    """BFCL's ``parallel_function_checker_no_order`` (greedy) or, in improved mode, an optimal matching."""
    if len(calls) != len(answers):
        return _fail("parallel_function_checker_no_order:wrong_count", "wrong number of functions")
    if mode == "improved":
        return _parallel_optimal(tools, calls, answers, underscore_to_dot)
    used: set[int] = set()
    for i, answer in enumerate(answers):
        tool = _find_tool(tools, _expected_name(answer))
        errors: list[Any] = []
        matched = False
        for j, call in enumerate(calls):
            if j in used:
                continue
            verdict = simple_check(tool, call, answer, underscore_to_dot=underscore_to_dot)
            if verdict.valid:
                used.add(j)
                matched = True
                break
            errors.append(
                {f"model output {j}": {"sub_error": verdict.error, "sub_error_type": verdict.error_type}}
            )
        if not matched:
            free = [j for j in range(len(calls)) if j not in used]
            return _fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"no call among indices {free} matches answer {i}",
                *errors,
            )
    return _OK


def _parallel_optimal(
    tools: Sequence[Tool], calls: Sequence[dict[str, Any]], answers: Sequence[Answer], underscore_to_dot: bool
) -> CheckResult:
    n = len(answers)
    if n == 0:
        return _OK
    verdicts = [
        [
            simple_check(_find_tool(tools, _expected_name(a)), c, a, underscore_to_dot=underscore_to_dot)
            for c in calls
        ]
        for a in answers
    ]
    passes = [[1.0 if v.valid else 0.0 for v in row] for row in verdicts]
    rows, cols = linear_sum_assignment(passes, maximize=True)
    pairs = [(int(r), int(c)) for r, c in zip(rows, cols, strict=True)]
    if all(passes[r][c] == 1.0 for r, c in pairs):
        return _OK
    # Report the first answer left without a passing call, with every call's reason.
    unmatched = next(r for r, c in pairs if passes[r][c] == 0.0)
    errors = [
        {f"model output {j}": {"sub_error": v.error, "sub_error_type": v.error_type}}
        for j, v in enumerate(verdicts[unmatched])
        if not v.valid
    ]
    return _fail(
        "parallel_function_checker_no_order:cannot_find_match",
        f"no assignment gives answer {unmatched} a matching call",
        *errors,
    )


def ast_check(
    category: str,
    tools: Sequence[Tool],
    calls: Sequence[dict[str, Any]],
    answers: Sequence[Answer],
    mode: Mode = "compat",
    *,
    underscore_to_dot: bool = False,
) -> CheckResult:
    """Dispatch by category name the way BFCL does: ``parallel`` → unordered parallel checker,
    ``multiple`` → multiple checker, anything else → exactly one call and the simple checker."""
    if "parallel" in category:
        return parallel_check(tools, calls, answers, mode, underscore_to_dot=underscore_to_dot)
    if "multiple" in category:
        return multiple_check(tools, calls, answers, underscore_to_dot=underscore_to_dot)
    if len(calls) != 1 or not answers:
        return _fail("simple_function_checker:wrong_count", "wrong number of functions")
    tool = tools[0] if tools else Tool(name=_expected_name(answers[0]))
    return simple_check(tool, calls[0], answers[0], underscore_to_dot=underscore_to_dot)
