"""A model as CriticTool's error simulator: it writes the wrong call, we check that it really is
the labelled kind of error, and fall back to the rule-based operator when it is not.

>>> import asyncio
>>> from toolmend import Tool, ToolCall
>>> tools = [Tool(name="weather_current", parameters={"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]})]
>>> calls = [ToolCall(name="weather_current", arguments={"city": "Oslo"})]
>>> async def fake(messages):
...     return '{"name": "weather_now", "arguments": {"city": "Oslo"}}'
>>> inj = asyncio.run(inject_with_model(calls, tools, "tool_hallucination", generate=fake, seed=0))
>>> inj.source, inj.calls[0].name
('model', 'weather_now')

Validation per label: a hallucinated tool must not be offered; a selected tool must be offered,
different, and called with arguments its schema accepts (CriticTool's silent error); a key
error must keep the tool and make the checker report a key finding; a value error must keep
the tool and the keys, change a value, and raise no finding outside the value category (a
value the schema accepts is kept as a context error the checker cannot see).
"""

from __future__ import annotations

import json
import string
from collections.abc import Awaitable, Callable, Sequence

from toolmend._errors import ConfigError
from toolmend._schema import Finding, Message, ToolCall
from toolmend.check import Checker, critictool_category
from toolmend.formats import parse_calls, to_openai_tool
from toolmend.synth.inject._api import ToolsLike, applicable, checker_for, inject
from toolmend.synth.inject._model import OPERATORS, InjectContext, Injection
from toolmend.synth.inject._site import calls_digest, site_rng

__all__ = ["DEFINITIONS", "ChatFn", "SYSTEM_PROMPT", "USER_TEMPLATE", "build_messages",
           "inject_with_model", "validate_corruption"]  # fmt: skip

ChatFn = Callable[[list[Message]], Awaitable[str]]
"""Any async chat function: messages in, the reply's text out."""

DEFINITIONS: dict[str, str] = {
    "tool_select_error": "it calls another tool from the list, one that does not do what the "
    "request needs, and fills that tool's parameters correctly",
    "tool_hallucination_error": "it calls a tool that is not in the list, under a believable name "
    "close to what the request needs",
    "parameters_key_error": "it keeps the right tool but gets a parameter name wrong: it leaves "
    "out a required parameter, writes a parameter under another name, or adds one the tool "
    "does not have",
    "parameters_value_error": "it keeps the right tool and parameter names but gives a wrong "
    "value: the wrong type, the wrong format, an empty value, or a value that belongs to "
    "something else in the conversation",
}

SYSTEM_PROMPT = (
    "You help build training data for assistants that call tools. You play an assistant that "
    "makes one particular mistake. Given the tools, the request and the correct call for the "
    "current step, write the call that such an assistant would make instead. The mistake: "
    "$definition. Keep everything else as in the correct call. Answer with the wrong call "
    'only, as one JSON object {"name": ..., "arguments": {...}}, and nothing else.'
)
USER_TEMPLATE = (
    "Tools:\n$tools\n\nRequest: $query\n\nCalls already made:\n$history\n\n"
    "Correct call for this step:\n$call\n\nWrite the wrong call."
)


def _dump(call: ToolCall) -> str:
    return json.dumps({"name": call.name, "arguments": call.model_dump(mode="json")["arguments"]})


def build_messages(
    calls: Sequence[ToolCall],
    checker: Checker,
    category: str,
    step: int,
    *,
    context: InjectContext | None = None,
    system: str | None = None,
    template: str | None = None,
) -> list[Message]:
    """The prompt for one step. ``system`` and ``template`` replace ours; both are
    :class:`string.Template` texts with ``$definition``, ``$tools``, ``$query``, ``$history``,
    ``$call`` and ``$label``."""
    fields = {
        "definition": DEFINITIONS[category],
        "label": category,
        "tools": "\n".join(json.dumps(to_openai_tool(t)) for t in checker.tools.values()),
        "query": (context or InjectContext()).query or "(not given)",
        "history": "\n".join(_dump(c) for c in calls[:step]) or "(none)",
        "call": _dump(calls[step]),
    }
    return [
        Message(role="system", content=string.Template(system or SYSTEM_PROMPT).safe_substitute(fields)),
        Message(role="user", content=string.Template(template or USER_TEMPLATE).safe_substitute(fields)),
    ]


def _categories(findings: list[Finding]) -> set[str | None]:
    return {critictool_category(f.code) for f in findings}


def validate_corruption(
    original: ToolCall, corrupted: ToolCall, category: str, checker: Checker
) -> str | None:
    """``None`` when ``corrupted`` is ``original`` broken in the way ``category`` names, else
    the reason it is not."""
    if corrupted.name == original.name and corrupted.arguments == original.arguments:
        return "the call is unchanged"
    findings = checker.check_call(corrupted)
    cats = _categories(findings)
    if category == "tool_hallucination_error":
        return None if corrupted.name not in checker.tools else f"{corrupted.name!r} is an offered tool"
    if category == "tool_select_error":
        if corrupted.name not in checker.tools:
            return f"{corrupted.name!r} is not an offered tool (that is a hallucination)"
        if corrupted.name == original.name:
            return "the tool is the right one"
        return None if not findings else f"the other tool's arguments are invalid: {findings[0].message}"
    if corrupted.name != original.name:
        return f"the tool changed to {corrupted.name!r}; a parameter error keeps the tool"
    if category == "parameters_key_error":
        return None if "parameters_key_error" in cats else "the checker finds no parameter-key error"
    if category == "parameters_value_error":
        if set(corrupted.arguments) != set(original.arguments):
            return "the parameter names changed; a value error keeps them"
        if cats - {"parameters_value_error"}:
            return f"the checker finds other errors: {findings[0].message}"
        return None
    raise ConfigError(f"no model-driven injection for label {category!r}")


def _sub_label(category: str, original: ToolCall, corrupted: ToolCall, findings: list[Finding]) -> str:
    codes = {f.code for f in findings}
    if category == "tool_hallucination_error":
        return "hallucination.model"
    if category == "tool_select_error":
        return "select.model"
    if category == "parameters_key_error":
        if "redundant_parameter" in codes and set(original.arguments) - set(corrupted.arguments):
            return "key.alias"
        return "key.drop_required" if "missing_required" in codes else "key.add_irrelevant"
    for code, label in (("invalid_type", "value.wrong_type"), ("invalid_value", "value.bad_format"),
                        ("empty_value", "value.empty")):  # fmt: skip
        if code in codes:
            return label
    return "value.from_context"


async def inject_with_model(
    calls: Sequence[ToolCall],
    tools: ToolsLike,
    operator: str,
    *,
    generate: ChatFn,
    seed: int,
    step: int | None = None,
    context: InjectContext | None = None,
    system: str | None = None,
    template: str | None = None,
) -> Injection | None:
    """Ask ``generate`` for the wrong call of one step; keep it when :func:`validate_corruption`
    accepts it (``source="model"``), else use the rule-based operator (``source="fallback"``,
    ``note`` says why). Only CriticTool's four internal operators have a model-driven variant.

    ``None`` when the operator applies to no step (or, with ``step`` given, the model failed
    there and the rule-based operator does not apply either).
    """
    op = OPERATORS.get(operator)
    if op.family != "critictool" or op.category is None:
        raise ConfigError(
            f"operator {operator!r} has no model-driven variant; use one of "
            "tool_selection, tool_hallucination, parameter_key, parameter_value"
        )
    checker = checker_for(tools)
    if step is None:
        steps = applicable(operator, calls, checker, context=context)
        if not steps:
            return None
        step = steps[site_rng(seed, operator, -1, calls_digest(calls)).randrange(len(steps))]
    elif not 0 <= step < len(calls):
        raise ConfigError(f"step {step} is outside the call list (it has {len(calls)} calls)")
    original = calls[step]
    messages = build_messages(
        calls, checker, op.category, step, context=context, system=system, template=template
    )
    reply = await generate(messages)
    parsed = parse_calls(reply)
    reason: str | None
    if not parsed.calls:
        reason = "no call could be read from the model's reply"
    else:
        got = parsed.calls[0]
        corrupted = got.model_copy(
            update={
                "id": original.id,
                "outputs": list(original.outputs),
                "output_fields": list(original.output_fields),
            }
        )
        reason = validate_corruption(original, corrupted, op.category, checker)
        if reason is None:
            findings = checker.check_call(corrupted)
            new_calls = [c.model_copy(deep=True) for c in calls]
            new_calls[step] = corrupted
            return Injection(
                operator=operator,
                family=op.family,
                label=op.label,
                sub_label=_sub_label(op.category, original, corrupted, findings),
                step=step,
                seed=seed,
                original=[original.model_copy(deep=True)],
                corrupted=[corrupted.model_copy(deep=True)],
                calls=new_calls,
                description=f"model-written {op.label} at step {step}: {_dump(corrupted)}",
                category=op.category,
                expected_codes=sorted({f.code for f in findings}),
                detectable=bool(findings),
                source="model",
            )
    assert reason is not None
    rule = inject(calls, checker, operator, seed=seed, step=step, context=context)
    if rule is None:
        return None
    return rule.model_copy(update={"source": "fallback", "note": f"model output rejected: {reason}"})
