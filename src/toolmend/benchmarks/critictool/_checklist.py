"""The checklist critic: a rule-based CriticTool solver that answers its prompts without an LLM.

It runs as a model backend, model string ``"checklist"`` (registered lazily in
:data:`toolmend.models.MODELS`), so that the CriticTool runner drives it like any model. It is an honest, deterministic baseline: it reads only the messages it
is sent (the tool list in the system prompt, the user query, the history), never the gold answer.

What it does, by the instruction it finds in the system prompt:

- **internal errors** (the prompt lists the four category labels): it checks the last call against
  the tool list with :class:`toolmend.check.Checker` and reads the last tool response for error
  signals (an ``{"error": ...}`` body, "invalid parameter", "unknown tool", HTTP-like codes). A
  finding names the category through :func:`toolmend.check.critictool_category` (a response that
  says the tool does not exist → ``tool_hallucination_error``, an unknown or missing parameter →
  ``parameters_key_error``, other rejected values → ``parameters_value_error``), and the call is
  corrected by :func:`toolmend.check._repair` (plus, for an unknown tool, the closest offered name).
  When it finds nothing wrong it says so (empty ``error``) and, since it cannot plan the next step
  of a task, answers ``FinishAction`` with a summary of the last response.
- **external errors** (skip or finish instruction): on an environment failure (timeout, rate
  limit, permission denied, service unavailable, connection reset, 5xx/429/403) it retries once —
  repeating the failed call exactly — and then, in finish mode, stops with a message to the user;
  in skip mode it also finishes (``FinishAction`` explaining the failure), because it cannot infer
  the next subtask from the query.

Its replies are cached like any model's (a rerun of a finished configuration computes none),
keyed by :func:`code_fingerprint` as well: a change to the critic's rules, the checker or the
prompt parsers gives new keys, so a cached reply never outlives the code that wrote it.

What it cannot do: notice a **tool-selection error** (an offered tool that is valid but wrong for
the task: no schema is broken and the response is a success), notice a plausible but wrong value
(right type and format), fill in a required argument that was dropped, or plan any next step.

>>> import asyncio, json
>>> from toolmend import Message
>>> system = ('Tools:\\n[{"name": "weather_now", "required_parameters": [{"name": "city", '
...     '"type": "string"}], "optional_parameters": []}]\\nTo use a tool, reply in JSON.\\n'
...     'Labels: tool_hallucination_error, parameters_key_error.\\nRemember: only generate ONE step each time.')
>>> msgs = [Message(role="system", content=system), Message(role="user", content="Weather in Oslo?"),
...     Message(role="assistant", content='{"name": "weather_now", "args": {"town": "Oslo"}}'),
...     Message(role="user", content='{"error": {"code": 400, "message": "unknown parameter town"}}')]
>>> json.loads(critique(msgs))["error"]
'parameters_key_error'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from toolmend._errors import ConfigError, ToolmendError
from toolmend._schema import Finding, Message, Tool, ToolCall
from toolmend._shared import source_fingerprint
from toolmend.check import Checker, critictool_category, repair
from toolmend.check._names import closest
from toolmend.formats._critictool import CATEGORIES, FINISH, ParsedAction, parse_action, prompt_tools
from toolmend.models._base import Completion, GenerateRequest, Model, Usage
from toolmend.models._cache import ResponseCache

__all__ = ["ChecklistCritic", "Signal", "checklist_backend", "code_fingerprint", "critique", "read_signal"]

Signal = Literal["ok", "environment", "unknown_tool", "key", "value", "error"]
"""What a tool response says: success, a transient environment failure, or a rejected call."""

_ENV_KINDS = ("timeout", "rate_limit", "permission_denied", "service_unavailable", "connection_reset")
_ENV_TEXT = re.compile(
    r"time[d ]?out|timed out|rate limit|too many requests|permission|forbidden|unavailable|"
    r"maintenance|connection reset|econnreset|try again later|\b(429|502|503|504|403)\b",
    re.IGNORECASE,
)
_UNKNOWN_TOOL = re.compile(
    r"no tool named|unknown (tool|function|api)|not one of the offered tools|tool .* does not exist|"
    r"not_found.*tool|no such (tool|function)",
    re.IGNORECASE,
)
_KEY_TEXT = re.compile(
    r"invalid parameter key|unknown parameter|unexpected (parameter|keyword|argument)|"
    r"missing (required )?(parameter|argument)|required (parameter|property)|is a required property|"
    r"redundant_parameter|missing_required",
    re.IGNORECASE,
)
_ERROR_TEXT = re.compile(r"invalid parameter|\berror\b|invalid|failed|not allowed|must be", re.IGNORECASE)
_PRIORITY = {
    "tool_hallucination_error": 0,
    "parameters_key_error": 1,
    "parameters_value_error": 2,
}
_FINISH_HINT = re.compile(
    r"tell the user|report the error|message to the user|ask (them |the user )?how|ask for the next",
    re.IGNORECASE,
)


def read_signal(content: str) -> Signal:
    """Classify a tool response by its error signals.

    >>> read_signal('{"error": {"code": 504, "type": "timeout", "message": "no answer"}}')
    'environment'
    >>> read_signal('{"temp_c": 18}')
    'ok'
    """
    try:
        data: Any = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        data = None
    text = content if isinstance(content, str) else str(content)
    if isinstance(data, dict) and data.get("error"):
        err = data["error"]
        kind = str(err.get("type", "")) if isinstance(err, dict) else ""
        code = err.get("code") if isinstance(err, dict) else None
        message = json.dumps(err) if isinstance(err, dict) else str(err)
        if kind in _ENV_KINDS or code in (403, 429, 502, 503, 504):
            return "environment"
        if code is None and _ENV_TEXT.search(message):
            return "environment"
        if code == 404 and _UNKNOWN_TOOL.search(message) or kind == "wrong_tool_name":
            return "unknown_tool"
        if _KEY_TEXT.search(message):
            return "key"
        return "value" if code in (400, 422) or kind else "error"
    if data is not None:
        return "ok"  # a JSON result without an error field
    if _ENV_TEXT.search(text):
        return "environment"
    if _UNKNOWN_TOOL.search(text):
        return "unknown_tool"
    if _KEY_TEXT.search(text):
        return "key"
    if _ERROR_TEXT.search(text):
        return "value"
    return "ok"


_SIGNAL_CATEGORY: dict[str, str] = {
    "unknown_tool": "tool_hallucination_error",
    "key": "parameters_key_error",
    "value": "parameters_value_error",
    "error": "parameters_value_error",
}


@lru_cache(maxsize=128)
def _tools(system: str) -> tuple[Tool, ...]:
    """The prompt's tool list, read once per prompt (a suite has a handful of distinct ones)."""
    try:
        return tuple(prompt_tools(system))
    except (ValueError, ToolmendError):  # an unreadable tool list is the prompt's problem: no tools
        return ()


@lru_cache(maxsize=128)
def _checker(system: str) -> Checker:
    # A suite has a handful of distinct tool lists: one compiled checker each, reused by every
    # prompt that offers the same tools; memoised by prompt too, since keying Checker.cached
    # serialises every tool (~3 ms for the world's 50).
    return Checker.cached(_tools(system))


def _category(findings: Sequence[Finding]) -> str | None:
    cats = [c for c in (critictool_category(f.code) for f in findings) if c is not None]
    return min(cats, key=lambda c: _PRIORITY.get(c, 9)) if cats else None


def _correct(call: ToolCall, checker: Checker) -> ToolCall:
    fixed = repair([call], checker).calls[0]
    if fixed.name not in checker.tools:
        near = closest(fixed.name, checker.tools, limit=1, cutoff=0.0)
        if near:
            fixed = repair([fixed.model_copy(update={"name": near[0]})], checker).calls[0]
    return fixed


def _reply(name: str, args: Any, *, cot: bool, thought: str, error: str | None = None) -> str:
    body: dict[str, Any] = {}
    if error is not None:
        body["error"] = error
    if cot:
        body["thought"] = thought
    body |= {"name": name, "args": args}
    return json.dumps(body, ensure_ascii=False)


def _error_reason(content: str) -> str:
    try:
        data = json.loads(content)
        message = data["error"]["message"] if isinstance(data["error"], dict) else data["error"]
        return str(message)
    except (ValueError, KeyError, TypeError):
        return content[:200]


def _history(messages: Sequence[Message]) -> tuple[list[ParsedAction], list[str]]:
    """The assistant actions and the response that followed each (``""`` when none did)."""
    actions: list[ParsedAction] = []
    responses: list[str] = []
    for msg in messages[1:]:
        if msg.role == "assistant":
            actions.append(parse_action(msg.content))
            responses.append("")
        elif actions and msg.role in ("tool", "user") and not responses[-1]:
            responses[-1] = msg.content
    return actions, responses


def critique(messages: Sequence[Message]) -> str:
    """The checklist critic's reply to one CriticTool prompt (see the module docstring)."""
    system = next((m.content for m in messages if m.role == "system"), "")
    checker = _checker(system)
    internal, finish_mode, cot = _instruction(system)
    actions, responses = _history(messages)
    if not actions:
        return _reply(FINISH, "I have no tool call to review.", cot=cot, thought="Nothing to review.")
    last, response = actions[-1], responses[-1]
    signal = read_signal(response)
    if internal:
        return _internal(last, response, signal, checker, cot)
    return _external(actions, responses, signal, finish_mode, cot)


@lru_cache(maxsize=128)
def _instruction(system: str) -> tuple[bool, bool, bool]:
    """(internal-error task, finish policy, chain of thought) as the system prompt asks.

    Memoised: the finish-hint regex scans the whole prompt, tool list included (~4 ms each).
    """
    internal = any(label in system for label in CATEGORIES)
    return internal, not internal and bool(_FINISH_HINT.search(system)), '"thought"' in system


def _internal(last: ParsedAction, response: str, signal: Signal, checker: Checker, cot: bool) -> str:
    args = last.args if isinstance(last.args, dict) else {}
    call = ToolCall(name=last.name, arguments=args)
    findings = checker.check_call(call) if last.name != FINISH else []
    category = _category(findings)
    if category is None and signal in _SIGNAL_CATEGORY:
        category = _SIGNAL_CATEGORY[signal]
    if category is None:
        summary = "No error found in the last step; the last result was: " + response[:300]
        return _reply(FINISH, summary, cot=cot, thought="The last call was valid.", error="")
    fixed = _correct(call, checker)
    thought = f"The last call to {last.name} was wrong ({category}); call {fixed.name} correctly."
    return _reply(fixed.name, fixed.arguments, cot=cot, thought=thought, error=category)


def _external(
    actions: list[ParsedAction], responses: list[str], signal: Signal, finish_mode: bool, cot: bool
) -> str:
    last = actions[-1]
    if signal != "environment":
        summary = "The request is handled; the last result was: " + responses[-1][:300]
        return _reply(FINISH, summary, cot=cot, thought="Nothing failed; report the result.")
    attempts = 0
    for action in reversed(actions):
        if action.same_call(last.name, last.args):
            attempts += 1
        else:
            break
    if attempts < 2:
        thought = f"{last.name} failed for a reason outside the call; try it once more."
        return _reply(last.name, last.args, cot=cot, thought=thought)
    reason = _error_reason(responses[-1])
    if finish_mode:
        message = (
            f"I ran into a problem calling {last.name} ({reason}) and retrying did not help. "
            "Please tell me how you would like to proceed."
        )
    else:
        message = f"I could not complete the request: the call to {last.name} failed ({reason})."
    return _reply(FINISH, message, cot=cot, thought=f"{last.name} keeps failing; stop and report it.")


_CODE = (
    "benchmarks/critictool/_checklist.py",
    "check",
    "formats",
    "_schema.py",
    "_jsontext.py",
    "_version.py",
)
"""What a reply is computed by, relative to the package: this module, the checker and its repairs
(:mod:`toolmend.check`), the prompt and action parsers (:mod:`toolmend.formats`), the schema
types, the JSON reader and the version."""


def code_fingerprint() -> str:
    """:func:`~toolmend._shared.source_fingerprint` of the code the critic's replies come from
    (:data:`_CODE`), part of its cache key: an edited rule, checker or parser misses the cache.

    >>> len(code_fingerprint())
    16
    """
    return source_fingerprint(*_CODE)


class ChecklistCritic(Model):
    """The rule-based critic as a :class:`~toolmend.models.Model` (``get_model("checklist")``).

    >>> import asyncio
    >>> from toolmend import Message
    >>> asyncio.run(ChecklistCritic().generate([Message(role="user", content="hi")])).text
    '{"name": "FinishAction", "args": "I have no tool call to review."}'
    """

    in_process = True
    """Answers without I/O: ``toolmend bench`` may keep many samples in progress at once."""
    http = False

    def __init__(self, name: str = "checklist", *, cache: ResponseCache | None = None) -> None:
        super().__init__(name, cache=cache, max_connections=1000)

    def cache_identity(self) -> dict[str, Any]:
        """The backend and name, and :func:`code_fingerprint`: replies cached by other code are
        never served."""
        return {**super().cache_identity(), "code": code_fingerprint()}

    async def _generate(self, request: GenerateRequest) -> Completion:
        text = critique(request.messages)
        return Completion(text=text, usage=Usage(output_tokens=len(text.split())), finish_reason="stop")


def checklist_backend(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    """The ``checklist`` model factory (see :data:`toolmend.models.MODELS`)."""
    if options:
        raise ConfigError(f"unexpected options for the checklist backend: {', '.join(sorted(options))}")
    return ChecklistCritic(f"checklist/{rest}" if rest else "checklist", cache=cache)
