"""CriticTool's Scalable and Robust Mixed (SRM) evolution of gold trajectories, by rule or by a model.

Each strategy changes what a critic is shown and keeps what the task asks (paper §2.2.5,
Appendix C.2.3); the builder then re-runs every label check on the evolved sample and drops
the ones whose label no longer holds (:mod:`toolmend.benchmarks.critic.verify`).

- ``long_context``: earlier, unrelated conversations (another task's request, its calls, their
  responses and the answer) are placed before the request.
- ``extra_tools``: distractor tools join the tool list: the nearest ones by sentence embedding
  among the tools of the source's other tasks, and same-domain siblings (``weather_alerts``
  next to ``weather_current``) that the environment answers by simulation.
- ``noisy_query``: typos (never inside a value the task needs), filler sentences, constraints
  in another order, dates and times written another way (``2025-07-26`` → ``July 26, 2025``).
  With a model, the model rewrites the request instead (:func:`rewrite_queries`); a rewrite that
  drops a value the gold calls need, or is not a request at all, falls back to the rule.
- ``harder_tools``: parameters renamed (``city`` → ``locality``), optional parameters nested in
  one object parameter, enums given close extra values (``archive`` next to ``archived``), and
  descriptions cut to their first clause. The environment translates calls back, so the gold
  still executes for real.
- ``mixed``: two to four of the above at once.

Everything is seeded: the same seed gives the same evolution, byte for byte. The nearest
distractors are ranked by sentence embeddings (rounded to 4 decimals), so another CPU could in
rare cases break a near-tie differently.

>>> hard = Hardener(seed=0)
>>> tool = Tool(name="weather_now", description="Current weather. Uses the nearest station.",
...     parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
>>> evolved = hard.tool(tool)
>>> evolved.description, list(evolved.properties)
('Current weather', ['locality'])
>>> hard.to_evolved(ToolCall(name="weather_now", arguments={"city": "Oslo"})).arguments
{'locality': 'Oslo'}
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from toolmend.benchmarks.critic.record import action_text
from toolmend.benchmarks.critic.traces import Trace
from toolmend.benchmarks.critic.verify import gold_values, query_keeps_gold, renderings
from toolmend.env import Environment, FaultPlan, ToolRegistry, ToolResponse
from toolmend.env.registry import RegisteredTool
from toolmend.errors import ConfigError, ToolmendError
from toolmend.schema import Message, Tool, ToolCall

__all__ = [
    "PLANS",
    "EVOLUTIONS",
    "Hardener",
    "Rewrite",
    "Toolbox",
    "domain",
    "evolve_trace",
    "noisy_query",
    "rewrite_queries",
]

EVOLUTIONS: tuple[str, ...] = ("long_context", "extra_tools", "noisy_query", "harder_tools")
"""The four SRM sub-strategies."""

PLANS: tuple[str, ...] = (*EVOLUTIONS, "mixed")
"""What the evolved variant gives its trajectories, in turn: one sub-strategy, or a mix."""


def domain(name: str) -> str:
    """A tool's domain: its name up to the first ``_`` or ``.`` (``weather_current`` → ``weather``)."""
    return re.split(r"[_.]", name, maxsplit=1)[0]


# -- harder tools -----------------------------------------------------------------------------

_SYNONYMS = {
    "city": "locality", "date": "day", "query": "search_text", "name": "full_name", "to": "recipient",
    "subject": "title_line", "body": "message_text", "title": "heading", "email": "mail_address",
    "amount": "sum", "location": "place", "start_time": "begins_at", "end_time": "ends_at",
    "folder": "mailbox", "category": "kind", "origin": "from_place", "destination": "to_place",
    "event_id": "event_ref", "path": "file_path", "content": "text", "limit": "max_results",
    "unit": "measure", "mode": "travel_mode", "priority": "urgency", "status": "state",
}  # fmt: skip

_CLOSE_SUFFIXES = ("d", "s", "_all", "_only")


@dataclass(frozen=True)
class _Reshape:
    renames: dict[str, str]
    """Base key → evolved key, for every key of the tool."""
    group: str | None = None
    members: tuple[str, ...] = ()
    """Base keys that move into the object parameter ``group``."""


class Hardener:
    """Harder versions of tools (one per tool name, seeded) and the call translation both ways."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._tools: dict[str, tuple[Tool, Tool, _Reshape]] = {}

    def _reshape(self, tool: Tool) -> tuple[Tool, _Reshape]:
        rng = random.Random(f"toolmend.critic.harder:{self.seed}:{tool.name}")
        props = tool.properties
        renames: dict[str, str] = {}
        for key in props:
            new = _SYNONYMS.get(key) or f"{key}_value"
            while new in props or new in renames.values():
                new += "_"
            renames[key] = new
        optional = [k for k in props if k not in tool.required]
        members = tuple(optional) if len(optional) >= 2 and rng.random() < 0.7 else ()
        group = "options" if members and "options" not in renames.values() else None
        members = members if group else ()
        schemas: dict[str, Any] = {}
        for key, schema in props.items():
            schema = dict(schema) if isinstance(schema, dict) else {}
            enum = schema.get("enum")
            if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
                # Near-identical extra values: the right one has to be read, not guessed.
                schema["enum"] = sorted({*enum, *(f"{v}{rng.choice(_CLOSE_SUFFIXES)}" for v in enum)})
            schemas[renames[key]] = schema
        evolved_props = {renames[k]: schemas[renames[k]] for k in props if k not in members}
        if group:
            evolved_props[group] = {
                "type": "object",
                "description": "Further settings.",
                "properties": {renames[k]: schemas[renames[k]] for k in members},
                "additionalProperties": False,
            }
        parameters = {**tool.parameters, "properties": evolved_props,
                      "required": [renames[k] for k in tool.required if k in renames]}  # fmt: skip
        description = re.split(r"(?<=\w)[.;:](\s|$)", tool.description, maxsplit=1)[0]
        evolved = tool.model_copy(update={"parameters": parameters, "description": description})
        return evolved, _Reshape(renames, group, members)

    def _entry(self, tool: Tool) -> tuple[Tool, Tool, _Reshape]:
        if tool.name not in self._tools:
            self._tools[tool.name] = (tool, *self._reshape(tool))
        return self._tools[tool.name]

    def tool(self, tool: Tool) -> Tool:
        """The harder version of ``tool`` (the same object for the same name)."""
        return self._entry(tool)[1]

    def to_evolved(self, call: ToolCall) -> ToolCall:
        """``call`` written for the harder tool; keys the tool does not know are kept as they are."""
        entry = self._tools.get(call.name)
        if entry is None:
            return call
        shape = entry[2]
        args: dict[str, Any] = {}
        nested: dict[str, Any] = {}
        for key, value in call.arguments.items():
            if key in shape.members:
                nested[shape.renames[key]] = value
            else:
                args[shape.renames.get(key, key)] = value
        if nested and shape.group:
            args[shape.group] = nested
        return call.model_copy(update={"arguments": args})

    def to_base(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Arguments of the harder tool ``name`` translated back for the original tool."""
        entry = self._tools.get(name)
        if entry is None:
            return args
        shape = entry[2]
        back = {new: old for old, new in shape.renames.items()}
        out: dict[str, Any] = {}
        for key, value in args.items():
            if shape.group and key == shape.group and isinstance(value, dict):
                out |= {back.get(str(k), str(k)): v for k, v in value.items()}
            else:
                out[back.get(key, key)] = value
        return out


def _translated(inner: RegisteredTool, hardener: Hardener | None) -> Any:
    def call(**kwargs: Any) -> Any:
        context = {name: kwargs.pop(name) for name in inner.inject if name in kwargs}
        args = hardener.to_base(inner.spec.name, kwargs) if hardener else kwargs
        return inner.invoke(args, context)

    return call


# -- extra tools ------------------------------------------------------------------------------

_SIBLINGS = (
    ("history", "Past records of {d}: entries before a given day."),
    ("export", "Export {d} data as a file."),
    ("alerts", "Subscribe to {d} alerts and notifications."),
    ("summary", "A short summary of recent {d} activity."),
    ("archive", "Move old {d} items to long-term storage."),
)


def _siblings(tools: Sequence[Tool]) -> list[Tool]:
    """Same-domain tools that look like the real ones but do something else (simulated answers)."""
    names = {t.name for t in tools}
    first: dict[str, Tool] = {}
    for tool in tools:
        first.setdefault(domain(tool.name), tool)
    out: list[Tool] = []
    for dom, model in sorted(first.items()):
        for verb, text in _SIBLINGS:
            name = f"{dom}_{verb}"
            if name in names:
                continue
            out.append(
                Tool(
                    name=name,
                    description=text.format(d=dom),
                    parameters=model.parameters,
                    returns={
                        "type": "object",
                        "properties": {
                            "status": {"type": "string"},
                            "items": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                )  # fmt: skip
            )
    return out


def _similarities(texts: list[str], queries: list[str]) -> list[list[float]]:
    """Cosine similarities (queries × texts) with the bundled sentence embedder, or by characters."""
    try:
        embedder = _embedder()
        vectors = embedder.encode(texts)
        probes = embedder.encode(queries)
        # Rounded so that the last bits of a float (which differ between CPUs) rarely break a tie.
        return [[round(float(x), 4) for x in row] for row in (probes @ vectors.T)]
    except ToolmendError:  # embeddings unavailable (no `embed` extra): fall back to characters
        from rapidfuzz import fuzz

        return [[fuzz.token_set_ratio(q, t) / 100 for t in texts] for q in queries]


_EMBEDDER: list[Any] = []


def _embedder() -> Any:
    from toolmend.compare.embed import Embedder

    if not _EMBEDDER:
        _EMBEDDER.append(Embedder())
    return _EMBEDDER[0]


def _text(tool: Tool) -> str:
    return f"{tool.name}: {tool.description}"


class Toolbox:
    """Distractor tools for a source's trajectories: embedding-nearest and same-domain."""

    def __init__(self, traces: Sequence[Trace], nearest: int = 3, same_domain: int = 2) -> None:
        pool: dict[str, Tool] = {}
        for trace in traces:
            for tool in trace.tools:
                pool.setdefault(tool.name, tool)
        for tool in _siblings(list(pool.values())):
            pool.setdefault(tool.name, tool)
        self.pool = [pool[name] for name in sorted(pool)]
        self.nearest = nearest
        self.same_domain = same_domain
        self._rank: dict[str, list[int]] = {}
        self._ranked_for(traces)

    def _ranked_for(self, traces: Sequence[Trace]) -> None:
        # One batch for the whole suite: the embedder is slow per call, fast per batch.
        probes = {
            t.id: " ".join(_text(x) for x in t.tools if x.name in {c.name for c in t.calls}) for t in traces
        }
        keys = sorted(probes)
        sims = _similarities([_text(t) for t in self.pool], [probes[k] for k in keys])
        for key, row in zip(keys, sims, strict=True):
            self._rank[key] = sorted(range(len(self.pool)), key=lambda i: (-row[i], self.pool[i].name))

    def distractors(self, trace: Trace, rng: random.Random) -> list[Tool]:
        """Tools to add to ``trace``'s list: the nearest few, then a few of the gold tools' domains."""
        offered = {t.name for t in trace.tools}
        order = [self.pool[i] for i in self._rank.get(trace.id, range(len(self.pool)))]
        fresh = [t for t in order if t.name not in offered]
        picked = fresh[: self.nearest]
        domains = {domain(c.name) for c in trace.calls}
        same = [t for t in fresh[self.nearest :] if domain(t.name) in domains]
        picked += rng.sample(same, min(self.same_domain, len(same)))
        return picked


# -- noisy query ------------------------------------------------------------------------------

_FILLERS = (
    "Sorry if this is a bit long, it has been a hectic week.",
    "Quick one before my next meeting.",
    "Thanks a lot in advance!",
    "No rush, but I would like it sorted today.",
    "My colleague said you could help with this.",
    "I tried doing it myself earlier but gave up.",
)


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 2)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == 1:
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def noisy_query(query: str, calls: Sequence[ToolCall], rng: random.Random) -> str:
    """``query`` with typos, filler, reordered sentences and reformatted dates and times.

    Values the gold calls take from the query are never touched by a typo.
    """
    values = gold_values(query, calls)
    keep = [r.lower() for v in values for r in renderings(v) if r.lower() in query.lower()]
    text = query
    # Unit and format variants: a date or a time the calls need, written another way (not one
    # inside a longer value, such as a date in a message the user dictates).
    for value in values:
        options = sorted(renderings(value) - {str(value)})
        inside = any(str(value) in str(other) and other != value for other in values)
        if options and str(value) in text and not inside and rng.random() < 0.7:
            chosen = rng.choice(options)
            text = text.replace(str(value), chosen)
            keep.append(chosen.lower())
    sentences = re.split(r"(?<=[.?!])\s+", text.strip())
    # Constraints in another order, unless a value runs across two sentences (a quoted message).
    whole = all(any(k in s.lower() for s in sentences) for k in keep if k in text.lower())
    if len(sentences) >= 2 and whole and rng.random() < 0.6:
        sentences = [*sentences[1:], sentences[0]] if rng.random() < 0.5 else [sentences[-1], *sentences[:-1]]
    words = " ".join(sentences).split(" ")
    tokens = keep + [t for k in keep for t in re.findall(r"\w{3,}", k)]
    spots = [
        i
        for i, w in enumerate(words)
        if len(w) >= 5 and w.isalpha() and not any(w.lower() in k or k in w.lower() for k in tokens)
    ]
    for i in rng.sample(spots, min(len(spots), rng.randint(1, 2))):
        words[i] = _typo(words[i], rng)
    text = " ".join(words)
    fillers = rng.sample(_FILLERS, rng.randint(1, 2))
    return f"{fillers[0]} {text}" + (f" {fillers[1]}" if len(fillers) > 1 else "")


# -- model-driven rewrite ---------------------------------------------------------------------

REWRITE_SYSTEM = (
    "You turn clean requests to a tool-using assistant into the kind of message a real, busy person "
    "would type. Add a little background that does not matter, some wordiness, and one or two small "
    "typing mistakes. Every name, number, date, time, amount, identifier and other value must stay "
    "exactly as written, everything the person asks for must still be asked, and nothing new may "
    "be asked. Reply with the rewritten message only: no quotes, no notes, no JSON."
)
REWRITE_USER = "Message: {query}\nValues to keep exactly as written: {values}"


@dataclass
class Rewrite:
    """A model's rewrite of one request: the text when it passed the checks, else why not."""

    text: str | None
    reason: str | None = None


def _clean(reply: str) -> str:
    text = reply.strip().strip("`").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def check_rewrite(original: str, reply: str, calls: Sequence[ToolCall]) -> Rewrite:
    """Accept a model's rewrite only if it reads as a request and keeps every value of the task."""
    text = _clean(reply)
    if not text:
        return Rewrite(None, "empty")
    if text[0] in "{[" or "\n\n" in text:
        return Rewrite(None, "not_a_request")
    if not len(original) / 2 <= len(text) <= max(6 * len(original), 400):
        return Rewrite(None, "length")
    if not query_keeps_gold(original, text, calls):
        return Rewrite(None, "drops_gold_value")
    return Rewrite(text)


async def _rewrite_one(
    model: Any, trace: Trace, calls: Sequence[ToolCall], gate: asyncio.Semaphore
) -> Rewrite:
    values = ", ".join(json.dumps(v) for v in gold_values(trace.query, calls)) or "(none)"
    messages = [
        Message(role="system", content=REWRITE_SYSTEM),
        Message(role="user", content=REWRITE_USER.format(query=trace.query, values=values)),
    ]
    async with gate:
        try:
            completion = await model.generate(messages, sample_id=f"rewrite-{trace.id}")
        except ToolmendError as exc:
            return Rewrite(None, f"model_error: {type(exc).__name__}")
    return check_rewrite(trace.query, completion.text or "", calls)


def rewrite_queries(
    items: Sequence[tuple[Trace, Sequence[ToolCall]]], model: Any, *, concurrency: int = 8
) -> dict[str, Rewrite]:
    """Ask ``model`` (a name for :func:`toolmend.models.get_model`, or a Model) to rewrite each request."""
    if isinstance(model, str):
        from toolmend.models import get_model

        model = get_model(model)

    async def run() -> list[Rewrite]:
        gate = asyncio.Semaphore(concurrency)
        return await asyncio.gather(*(_rewrite_one(model, t, c, gate) for t, c in items))

    return {t.id: r for (t, _), r in zip(items, asyncio.run(run()), strict=True)}


# -- putting it together ----------------------------------------------------------------------


@dataclass
class Evolved:
    """An evolved trajectory and how its calls are written in it."""

    trace: Trace
    strategies: list[str]
    hardener: Hardener | None = None
    query_source: str = "original"
    """``rule``, ``model``, ``fallback`` (the model's rewrite failed a check) or ``original``."""
    fallback: str | None = None

    def call(self, call: ToolCall) -> ToolCall:
        """``call`` as written for the evolved tools."""
        return self.hardener.to_evolved(call) if self.hardener else call


def _strategies(plan: str, rng: random.Random) -> list[str]:
    if plan != "mixed":
        return [plan]
    return sorted(rng.sample(EVOLUTIONS, rng.randint(2, 4)), key=EVOLUTIONS.index)


def _context(
    others: Sequence[tuple[Trace, list[ToolCall], list[ToolResponse]]], limit: int
) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for trace, calls, responses in others:
        turns.append({"role": "user", "content": trace.query})
        for call, response in zip(calls, responses, strict=True):
            turns.append({"role": "assistant", "content": action_text(call.name, call.arguments)})
            turns.append({"role": "function", "content": response.content[:limit]})
        done = "Done. " + (responses[-1].content[:200] if responses else "")
        turns.append({"role": "assistant", "content": action_text("FinishAction", done)})
    return turns


def evolve_trace(
    trace: Trace,
    calls: Sequence[ToolCall],
    plan: str,
    rng: random.Random,
    *,
    hardener: Hardener,
    toolbox: Toolbox | None,
    others: Sequence[tuple[Trace, list[ToolCall], list[ToolResponse]]],
    rewrite: Rewrite | None = None,
) -> Evolved:
    """``trace`` evolved by ``plan`` (a strategy or ``mixed``); ``calls`` are its concrete gold calls.

    ``others`` are candidate unrelated trajectories (with their calls and responses) for long
    context; ``rewrite`` is a model's checked rewrite of the request, used for ``noisy_query``.
    """
    if plan not in PLANS:
        raise ConfigError(f"unknown evolution {plan!r}; expected one of {', '.join(PLANS)}")
    chosen = _strategies(plan, rng)
    evolved = Evolved(trace, chosen)
    query, tools, context = trace.query, list(trace.tools), list(trace.context)
    if "long_context" in chosen and others:
        domains = {domain(c.name) for c in calls}
        unrelated = [
            o for o in others if o[0].id != trace.id and not domains & {domain(c.name) for c in o[1]}
        ]
        picked = rng.sample(unrelated or list(others), min(2, len(unrelated or others)))
        context = _context(picked, 600) + context
        # The earlier conversations' tools join the list, so that their calls make sense.
        for other, _, _ in picked:
            known = {t.name for t in tools}
            tools += [t for t in other.tools if t.name not in known]
    if "extra_tools" in chosen and toolbox is not None:
        tools += toolbox.distractors(replace(trace, tools=tools), rng)
    if "noisy_query" in chosen:
        if rewrite is not None and rewrite.text is not None:
            query, evolved.query_source = rewrite.text, "model"
        else:
            query = noisy_query(trace.query, calls, rng)
            evolved.query_source = "rule" if rewrite is None else "fallback"
            evolved.fallback = rewrite.reason if rewrite is not None else None
    if "harder_tools" in chosen:
        tools = [hardener.tool(t) for t in tools]
        evolved.hardener = hardener
    base = trace.factory
    translate = evolved.hardener

    def make(faults: FaultPlan | None = None) -> Environment:
        inner = base(None)
        registry = ToolRegistry()
        for tool in tools:
            registered = inner.registry.get(tool.name)
            if registered is not None:
                registry.add(tool, _translated(registered, translate), inject=registered.inject)
        simulated = [t for t in tools if t.name not in registry]
        return Environment(registry, tools=simulated, faults=faults, context=inner.context,
                           cache_scope=inner.cache_scope)  # fmt: skip

    evolved.trace = replace(
        trace,
        query=query,
        tools=tools,
        calls=[evolved.call(c) for c in trace.calls],
        factory=make,
        context=context,
        evolution=chosen,
    )
    return evolved
