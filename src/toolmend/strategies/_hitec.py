"""``hitec-icl``: HiTEC's checklists in the prompt (§3.2): the global error checklist in the
first request, then a second, checklist-guided round with a local checklist per tool.

The local checklist is derived from the tool's schema, deterministically: required parameters,
types, enums, ranges, formats, and near-miss names (tools and parameters that are easy to
confuse). Optionally a model writes one per tool too (HiTEC Appendix A's idea, in our words),
generated once per tool schema and cached on disk under the schema's hash.

The wording is toolmend's; pass ``global_template`` / ``review_template`` (``{checklist}`` is
filled in) to use your own.

Which answer is returned (``keep``): HiTEC's procedure takes the second round's answer as the
result (``keep="second"``). A small model often breaks a right first answer in that round (it
drops a parameter, or answers the review with prose or nothing), so by default
(``keep="checked"``) both answers are checked with toolmend's checklist of the tools' schemas
(:class:`~toolmend.check.Checker`: names, required parameters, types, enums, ranges, plus the
reply format's parse findings) and the first is kept when the second is worse: it has no call
where the first had one, or more findings than the first (findings where the first had none).
Otherwise the second stands, as in the paper. ``keep="findings"`` is more conservative still:
the second round runs only when the checker finds something in the first answer, so an answer
the checker passes is never sent back for review (where a review makes a right call wrong but
well-formed, no schema check can tell). The sample's
``hitec-icl`` event says which was kept (``kept``: ``first`` or ``second``; ``why``:
``no_call``, ``findings``, or ``clean`` when a clean first answer skipped the review;
``findings``: how many each answer had) and how many requests the strategy added.

>>> from toolmend import Tool
>>> t = Tool(name="get_weather", parameters={"type": "object", "properties": {
...     "unit": {"type": "string", "enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 1}},
...     "required": ["days"]})
>>> print(local_checklist(t, [t]))
Checklist for get_weather:
- Required: days. Never leave one out; never invent a value the request does not give.
- 'unit': a string; one of ["c", "f"] exactly.
- 'days': an integer; >= 1.
- Use only these parameter names: unit, days.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from rapidfuzz import fuzz

from toolmend._errors import ConfigError
from toolmend._kvcache import FILES, KVCache
from toolmend._schema import Finding, Message, Tool
from toolmend.check import Checker
from toolmend.guard import Turn
from toolmend.guard._reask import turn_findings
from toolmend.models._base import Model
from toolmend.models._cache import default_cache_dir
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_answer, read_reply, reply_format

__all__ = ["GLOBAL_CHECKLIST", "ChecklistCache", "HitecICL", "local_checklist", "schema_hash"]

_NAMESPACE = "checklists"

GLOBAL_CHECKLIST = """Before you answer, check your tool calls against this list:
1. Tool name: call only tools from the list, spelled exactly as given.
2. Required parameters: give every required parameter.
3. Types: give each value the type its parameter declares (a number as a number, a list as a list).
4. Empty values: never pass an empty string or null where a real value is needed.
5. Extra parameters: use only the parameters the tool declares, and only those the request calls for.
6. Format: write the calls exactly in the required format, so that they can be parsed.
7. No extra text: output the calls only, with nothing around them.
8. Number of calls: make exactly the calls the request needs, no more and no fewer."""

DEFAULT_GLOBAL_TEMPLATE = "{request}\n\n{checklist}"
DEFAULT_REVIEW_TEMPLATE = (
    "Review your answer with these tool-specific checklists:\n\n{checklist}\n\n"
    "If your answer breaks any point, answer again with the corrected calls; if it is right, "
    "repeat it unchanged. Use the same format and add nothing else."
)
_WRITE_PROMPT = (
    "Write an error checklist for the tool below. For each kind of mistake (a missing required "
    "parameter, a wrong type, an empty value, a parameter the request did not ask for, a broken "
    "format, extra text around the call), give one line saying how that mistake would look for "
    "this tool and how to avoid it. Answer with the list only.\n\nTool: {tool}"
)


def schema_hash(tool: Tool) -> str:
    """A stable hash of a tool's name, description and parameters."""
    body = json.dumps([tool.name, tool.description, tool.parameters], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def _describe(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any value"
    parts = []
    t = schema.get("type")
    if isinstance(t, str):
        parts.append({"integer": "an integer", "array": "an array", "object": "an object"}.get(t, f"a {t}"))
    extra = []
    if isinstance(schema.get("enum"), list):
        extra.append(f"one of {json.dumps(schema['enum'], ensure_ascii=False)} exactly")
    for key, sym in (
        ("minimum", ">="),
        ("maximum", "<="),
        ("exclusiveMinimum", ">"),
        ("exclusiveMaximum", "<"),
    ):
        if isinstance(schema.get(key), int | float):
            extra.append(f"{sym} {schema[key]}")
    if isinstance(schema.get("format"), str):
        extra.append(f"in {schema['format']} format")
    if isinstance(schema.get("pattern"), str):
        extra.append(f"matching {schema['pattern']}")
    items = schema.get("items")
    if isinstance(items, dict) and isinstance(items.get("type"), str):
        extra.append(f"items are {_describe(items)}")
    return "; ".join([", ".join(parts) or "any value", *extra])


def local_checklist(tool: Tool, tools: Sequence[Tool]) -> str:
    """The deterministic local checklist of ``tool`` (``tools``: all offered, for near misses)."""
    lines = [f"Checklist for {tool.name}:"]
    if tool.required:
        lines.append(
            f"- Required: {', '.join(tool.required)}. Never leave one out; never invent a value the request does not give."
        )
    for name, schema in tool.properties.items():
        lines.append(f"- '{name}': {_describe(schema)}.")
    names = list(tool.properties)
    lines.append(
        f"- Use only these parameter names: {', '.join(names) or 'none (the tool takes no arguments)'}."
    )
    close = [
        (a, b) for i, a in enumerate(names) for b in names[i + 1 :] if fuzz.ratio(a.lower(), b.lower()) >= 75
    ]
    if close:
        lines.append("- Easy to confuse: " + "; ".join(f"'{a}' vs '{b}'" for a, b in close) + ".")
    similar = [
        t.name for t in tools if t.name != tool.name and fuzz.ratio(t.name.lower(), tool.name.lower()) >= 75
    ]
    if similar:
        lines.append(f"- Not to be confused with the tool(s) {', '.join(similar)}.")
    return "\n".join(lines)


class ChecklistCache:
    """Model-written checklists on disk (a :class:`~toolmend._kvcache.KVCache`, namespace
    ``checklists``), keyed by (schema hash, writer)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / FILES[_NAMESPACE]
        self._kv = KVCache(self.path, label="checklist cache")
        self._kv.ensure(_NAMESPACE)

    def get(self, schema: str, writer: str) -> str | None:
        """The cached checklist, if any."""
        value = self._kv.get(_NAMESPACE, f"{schema}:{writer}")
        return None if value is None else str(value)

    def put(self, schema: str, writer: str, text: str) -> None:
        """Store a checklist (replacing one of the same key)."""
        self._kv.put(_NAMESPACE, f"{schema}:{writer}", text, model=writer)


class HitecICL:
    """See the module docstring.

    ``model_checklists=True`` adds a model-written checklist per tool to the derived one. With
    ``checklist_model`` (a model string or :class:`~toolmend.models.Model`, as HiTEC had a larger
    model write them) it is written once per tool schema and kept in SQLite under the schema's
    hash and that model's name (``checklist_cache``: the file; default in the cache folder);
    without, the solving model writes it, once per tool schema in this run (it is part of what
    is measured, so it is not reused across runs). ``second_round=False`` keeps only the global
    checklist (HiTEC's "w/o local"), ``global_checklist=False`` only the review round ("w/o
    global"). ``keep`` chooses between the two answers: ``"checked"``
    (default) keeps the first when the checker finds the second worse, ``"second"`` always
    takes the second, as HiTEC does, and ``"findings"`` reviews only a first answer with
    findings (see the module docstring)."""

    name = "hitec-icl"

    def __init__(
        self,
        *,
        global_template: str = DEFAULT_GLOBAL_TEMPLATE,
        review_template: str = DEFAULT_REVIEW_TEMPLATE,
        second_round: bool = True,
        global_checklist: bool = True,
        model_checklists: bool = False,
        checklist_model: str | Model | None = None,
        checklist_cache: str | Path | None = None,
        max_tools: int = 5,
        keep: Literal["checked", "second", "findings"] = "checked",
    ) -> None:
        if keep not in ("checked", "second", "findings"):
            raise ConfigError(f"hitec-icl keep must be checked, second or findings, got {keep!r}")
        self.global_template = global_template
        self.review_template = review_template
        self.second_round = second_round
        self.global_checklist = global_checklist
        self.model_checklists = model_checklists or checklist_model is not None
        self.checklist_model = checklist_model
        self.cache = ChecklistCache(checklist_cache) if checklist_model is not None else None
        self._run_cache: dict[str, str] = {}
        self.max_tools = max_tools
        self.keep = keep

    async def _written(self, tool: Tool, generate: Generate) -> str:
        key = schema_hash(tool)
        prompt = [Message(role="user", content=_WRITE_PROMPT.format(tool=json.dumps(
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters}, ensure_ascii=False)))]  # fmt: skip
        if self.checklist_model is None:
            if key not in self._run_cache:
                self._run_cache[key] = (await generate(prompt)).strip()
            return self._run_cache[key]
        from toolmend.models import get_model

        writer = get_model(self.checklist_model)
        assert self.cache is not None
        text = self.cache.get(key, writer.name)
        if text is None:
            text = (await writer.generate(prompt)).text.strip()
            self.cache.put(key, writer.name, text)
        return text

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        fmt = reply_format(state.benchmark)
        tools = list(state.sample.tools)
        checker = Checker.cached(tools) if tools and self.keep != "second" else None

        async def hitec(messages: list[Message], *, epoch: int | None = None) -> str:
            first = _with_global(messages, self.global_template) if self.global_checklist else messages
            reply = await generate(first, epoch=epoch)
            event: dict[str, Any] = {"kind": "hitec-icl", "rounds": 1, "requests": 0}
            added = 0

            async def again(messages: list[Message], *, epoch: int | None = None) -> str:
                nonlocal added
                added += 1
                return await generate(messages, epoch=epoch)

            reviewing = self.second_round and bool(tools)
            if reviewing and checker is not None:
                before = read_answer(reply, fmt, state)
                first_found = turn_findings(before, checker)
                if self.keep == "findings" and not first_found:
                    reviewing = False
                    event.update(kept="first", why="clean", findings=[0])
            if reviewing:
                named = {c.name for c in read_reply(reply, fmt).calls}
                chosen = [t for t in tools if t.name in named] or tools[: self.max_tools]
                parts = [local_checklist(t, tools) for t in chosen]
                if self.model_checklists:
                    parts += [f"Also for {t.name}:\n{await self._written(t, again)}" for t in chosen]
                review = self.review_template.format(checklist="\n\n".join(parts))
                second = [
                    *first,
                    Message(role="assistant", content=reply),
                    Message(role="user", content=review),
                ]
                revised = await again(second, epoch=epoch)
                event.update(
                    rounds=2, changed=revised.strip() != reply.strip(), tools=[t.name for t in chosen]
                )
                if checker is None:
                    event["kept"] = "second"
                    reply = revised
                else:
                    after = read_answer(revised, fmt, state)  # it answers the sample's request too
                    found = (first_found, turn_findings(after, checker))
                    why = _worse(before, after, *found)
                    event.update(kept="first" if why else "second", findings=[len(f) for f in found])
                    if why:
                        event["why"] = why
                    else:
                        reply = revised
            event["requests"] = added
            state.events.append(event)
            return reply

        return hitec


def _worse(first: Turn, second: Turn, first_found: list[Finding], second_found: list[Finding]) -> str:
    """Why the second answer is worse than the first ("" when it is not): it calls nothing where
    the first called (an empty or prose answer to the review), or it has more findings.

    >>> one = Turn.from_text("[f(a=1)]")
    >>> _worse(one, Turn.from_text(""), [], []), _worse(Turn.from_text(""), one, [], [])
    ('no_call', '')
    """
    if first.calls and not second.calls:
        return "no_call"
    return "findings" if len(second_found) > len(first_found) else ""


def _with_global(messages: list[Message], template: str) -> list[Message]:
    """The messages with the global checklist added to the last user message (the request)."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            out[i] = out[i].model_copy(
                update={"content": template.format(request=out[i].content, checklist=GLOBAL_CHECKLIST)}
            )
            return out
    return [*out, Message(role="user", content=GLOBAL_CHECKLIST)]
