"""``noisy/<inner>``: any backend, with labelled, calibrated mistakes — a model to measure
recovery strategies against when no LLM is at hand, and a chaos monkey for agents.

It asks the inner backend (``noisy/scripted`` wraps the gold oracle), then, with probability
``rates[op]`` per operator (``noise=x`` spreads ``x`` evenly over :data:`DEFAULT_OPERATORS`),
corrupts the answer with that :mod:`toolmend.synth.inject` operator, so every error carries its
label. How it reacts to what it is told afterwards is set by three explicit parameters:

- ``p_fix_precise`` — it fixes its error when the feedback names what is wrong (a tool name or
  parameter of the difference, or the format problem);
- ``p_fix_vague`` — it fixes it when the feedback does not;
- ``p_break`` — it breaks a correct answer when asked (by a user message) to look at it again.

When it does not fix, it repeats its previous answer. Every draw is seeded by ``seed`` and the
conversation, so the same run gives the same answers. Figures measured with it are simulations;
:meth:`NoisyModel.describe` gives the label with every parameter.

>>> import asyncio
>>> from toolmend.models import get_model
>>> from toolmend import Message, Tool
>>> tools = [Tool(name="get_weather", parameters={"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]})]
>>> m = get_model("noisy/scripted", script=lambda ms: '[get_weather(city="Oslo")]',
...               rates={"hitec_missing_required": 1.0}, tools=tools)
>>> asyncio.run(m.generate([Message(role="user", content="weather?")])).text
'[get_weather()]'
>>> m.describe()
'simulation: noisy/scripted rates={hitec_missing_required: 1.0} p_fix_precise=0.9 p_fix_vague=0.3 p_break=0.05 seed=0'
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.formats import load_tool, parse_calls, write_calls
from toolmend.models._base import Completion, GenerateRequest, Model, RawToolCall, Usage
from toolmend.models._cache import ResponseCache

__all__ = ["DEFAULT_OPERATORS", "NOISY_OPTIONS", "NoisyModel", "noisy_backend", "sample_tools"]

NOISY_OPTIONS = ("rates", "noise", "p_fix_precise", "p_fix_vague", "p_break", "seed", "tools")
"""The keyword options of ``noisy/``; any other option goes to the inner backend."""

DEFAULT_OPERATORS: tuple[str, ...] = (
    "hitec_wrong_tool_name",
    "hitec_missing_required",
    "hitec_invalid_type",
    "hitec_empty_value",
    "hitec_redundant_parameter",
    "hitec_invalid_format",
    "hitec_redundant_information",
    "hitec_wrong_tool_count",
    "tool_hallucination",
    "parameter_value",
)
"""The operators ``noise=x`` spreads over: HiTEC's global checklist errors plus CriticTool's
hallucinated tool and wrong value (some of which no schema check can see)."""

sample_tools: contextvars.ContextVar[list[Tool] | None] = contextvars.ContextVar(
    "toolmend_noisy_tools", default=None
)
"""The tools of the sample being answered, for prompt-mode runs where the request carries none
(the benchmark runner sets it per sample)."""

_PREAMBLE = "Sure! To answer this I will call a tool. Here is the call:\n"
_FORMAT_WORDS = re.compile(r"format|could not be read|parse|unreadable", re.I)
_PROSE_WORDS = re.compile(r"text around|prose|nothing else|only the call", re.I)


@dataclass
class _Said:
    """What the model answered for a prefix: its answer, the gold, and whether they differ."""

    gold: Completion
    answer: Completion
    wrong: bool
    label: str | None
    round: int


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _key(messages: Sequence[Message]) -> str:
    return _digest(
        [
            m.model_dump(mode="json", exclude={"tool_calls"}) | {"calls": _calls_key(m.tool_calls)}
            for m in messages
        ]
    )


def _calls_key(calls: Sequence[ToolCall]) -> list[str]:
    # Names only: a guard may write unreadable arguments back as {}.
    return [c.name for c in calls]


def _answer_key(c: Completion) -> tuple[str, list[str]]:
    names = [t.name for t in c.tool_calls] + [r.name for r in c.raw_tool_calls if r.error]
    return c.text.strip(), names


class NoisyModel(Model):
    """See the module docstring. ``inner`` is any :class:`~toolmend.models.Model`."""

    cacheable = False  # the inner backend caches; the noise is recomputed (it is cheap and seeded)

    def __init__(
        self,
        inner: Model,
        *,
        rates: Mapping[str, float] | None = None,
        noise: float | None = None,
        p_fix_precise: float = 0.9,
        p_fix_vague: float = 0.3,
        p_break: float = 0.05,
        seed: int = 0,
        tools: Sequence[Tool | Mapping[str, Any]] | None = None,
    ) -> None:
        from toolmend.synth.inject import OPERATORS

        super().__init__(f"noisy/{inner.name}", max_connections=inner.max_connections)
        if rates is not None and noise is not None:
            raise ConfigError("give noisy either rates= or noise=, not both")
        if noise is not None:
            rates = {op: noise / len(DEFAULT_OPERATORS) for op in DEFAULT_OPERATORS}
        self.rates = dict(rates or {})
        for op, p in self.rates.items():
            OPERATORS.get(op)  # unknown names fail here, listing the known ones
            if not 0.0 <= p <= 1.0:
                raise ConfigError(f"noisy rate of {op} must be in [0, 1], got {p}")
        if sum(self.rates.values()) > 1.0 + 1e-9:
            raise ConfigError(
                f"noisy rates add up to {sum(self.rates.values()):.3f}; at most 1 (one error per answer)"
            )
        for name, p in (("p_fix_precise", p_fix_precise), ("p_fix_vague", p_fix_vague), ("p_break", p_break)):
            if not 0.0 <= p <= 1.0:
                raise ConfigError(f"noisy {name} must be in [0, 1], got {p}")
        self.inner = inner
        self.http = inner.http
        self.p_fix_precise, self.p_fix_vague, self.p_break = p_fix_precise, p_fix_vague, p_break
        self.seed = seed
        # The parameters are part of the name, so that runs and reports say what was simulated.
        tag = (
            [f"noise={noise}"]
            if noise is not None
            else ([f"rates={_digest(self.rates)[:8]}"] if self.rates else [])
        )
        tag += [f"{k}={v}" for k, v, d in (("p_fix_precise", p_fix_precise, 0.9), ("p_fix_vague", p_fix_vague, 0.3),
                                          ("p_break", p_break, 0.05), ("seed", seed, 0)) if v != d]  # fmt: skip
        self.name = f"noisy[{','.join(tag)}]/{inner.name}" if tag else f"noisy/{inner.name}"
        self.tools = [t if isinstance(t, Tool) else load_tool(t) for t in tools] if tools else None
        self._said: dict[str, _Said] = {}
        self.stats: dict[str, int] = {
            "answers": 0,
            "injected": 0,
            "fixed": 0,
            "repeated": 0,
            "broken": 0,
            "untouched": 0,
        }
        self.labels: dict[str, int] = {}
        self.first_label: dict[str, str | None] = {}
        """Per ``sample_id``: the label of the error in the first answer (epoch 0), or None."""

    @property
    def parameters(self) -> dict[str, Any]:
        """Every parameter that shapes the noise (for labels and manifests)."""
        return {
            "rates": dict(self.rates),
            "p_fix_precise": self.p_fix_precise,
            "p_fix_vague": self.p_fix_vague,
            "p_break": self.p_break,
            "seed": self.seed,
        }

    def describe(self) -> str:
        """The label every figure measured with this model carries."""
        rates = ", ".join(f"{k}: {round(v, 4)}" for k, v in sorted(self.rates.items()))
        return (
            f"simulation: noisy/{self.inner.name} rates={{{rates}}} p_fix_precise={self.p_fix_precise} "
            f"p_fix_vague={self.p_fix_vague} p_break={self.p_break} seed={self.seed}"
        )

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "noisy", "inner": self.inner.cache_identity(), **self.parameters}

    def request_defaults(self) -> dict[str, Any]:
        return self.inner.request_defaults()

    async def aclose(self) -> None:
        await self.inner.aclose()

    # -- answering -------------------------------------------------------------------------

    async def _generate(self, request: GenerateRequest) -> Completion:
        self.stats["answers"] += 1
        messages = request.messages
        prev = self._previous(messages)
        if prev is not None and prev[1].wrong:
            return self._react(request, prev[1], messages[prev[0] + 1 :])
        gold = await self.inner.generate(
            messages, tools=request.tools or None, tool_choice=request.tool_choice,
            config=request.config, epoch=request.epoch, sample_id=request.sample_id,
        )  # fmt: skip
        if prev is not None:
            k, said = prev
            asked = any(m.role == "user" for m in messages[k + 1 :])
            if asked and _answer_key(gold) == _answer_key(said.gold):
                return self._reconsider(request, said, gold)
        rng = self._rng(messages, request.epoch, "first")
        answer, label = self._corrupt(gold, request, rng, rng.random())
        if request.sample_id is not None and request.epoch == 0:
            self.first_label.setdefault(request.sample_id, label)
        self._remember(messages, gold, answer, label, 0)
        return answer

    def _previous(self, messages: list[Message]) -> tuple[int, _Said] | None:
        """The last assistant message that is this model's own answer to the prefix before it."""
        for k in range(len(messages) - 1, -1, -1):
            m = messages[k]
            if m.role != "assistant":
                continue
            said = self._said.get(_key(messages[:k]))
            if said is not None and _answer_key(said.answer) == (m.content.strip(), _calls_key(m.tool_calls)):
                return k, said
            return None
        return None

    def _remember(
        self, prefix: list[Message], gold: Completion, answer: Completion, label: str | None, round: int
    ) -> None:
        self._said[_key(prefix)] = _Said(gold, answer, label is not None, label, round)

    def _react(self, request: GenerateRequest, said: _Said, after: list[Message]) -> Completion:
        """Told about a wrong answer: fix it (p_fix_precise / p_fix_vague) or repeat it."""
        messages = request.messages
        draw = self._rng(messages, request.epoch, "react").random()
        p = self.p_fix_precise if self._precise(said, after) else self.p_fix_vague
        if draw < p:
            self.stats["fixed"] += 1
            answer, label = said.gold, None
        else:
            self.stats["repeated"] += 1
            answer, label = said.answer, said.label
        self._remember(messages, said.gold, answer, label, said.round + 1)
        words = sum(len(m.content.split()) for m in messages)
        return answer.model_copy(
            update={"usage": Usage(input_tokens=words, output_tokens=len(answer.text.split()))}
        )

    def _reconsider(self, request: GenerateRequest, said: _Said, gold: Completion) -> Completion:
        """Asked to look again at a correct answer (the inner model still gives the same one):
        sometimes it talks itself out of it (p_break)."""
        rng = self._rng(request.messages, request.epoch, "react")
        answer, label = gold, None
        if rng.random() < self.p_break:
            answer, label = self._corrupt(gold, request, rng, None)
            self.stats["broken"] += label is not None
        self._remember(request.messages, gold, answer, label, said.round + 1)
        return answer

    def _precise(self, said: _Said, after: list[Message]) -> bool:
        """Whether the feedback names the difference between the answer and the gold."""
        own = said.answer.text.strip()
        text = "\n".join(m.content.replace(own, "") if own else m.content for m in after)
        if said.label == "invalid_format":
            return bool(_FORMAT_WORDS.search(text))
        if said.label == "redundant_information":
            return bool(_PROSE_WORDS.search(text))
        tokens = _difference(_calls_of(said.answer), _calls_of(said.gold))
        return any(re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", text) for t in tokens)

    # -- corruption ------------------------------------------------------------------------

    def _rng(self, messages: list[Message], epoch: int, what: str) -> random.Random:
        return random.Random(_digest(self.seed, what, epoch, _key(messages)))

    def _tools(self, request: GenerateRequest) -> list[Tool]:
        return list(request.tools) or sample_tools.get() or list(self.tools or [])

    def _corrupt(
        self, gold: Completion, request: GenerateRequest, rng: random.Random, u: float | None
    ) -> tuple[Completion, str | None]:
        """With the cumulative rates, ``u`` picks an operator (or none; ``None`` forces one, any
        operator alike); the first applicable one from there on is applied, so the error rate
        stays as asked when one cannot apply."""
        from toolmend.synth.inject import inject

        ops = sorted(self.rates) or list(DEFAULT_OPERATORS)
        pick: int | None = rng.randrange(len(ops)) if u is None else None
        total = 0.0
        for i, op in enumerate(ops if u is not None else ()):
            total += self.rates.get(op, 0.0)
            if u is not None and u < total:
                pick = i
                break
        tools = self._tools(request)
        native = bool(gold.tool_calls) or bool(gold.raw_tool_calls)
        parsed = None if native else parse_calls(gold.text)
        calls = list(gold.tool_calls) if native else (list(parsed.calls) if parsed is not None else [])
        if pick is None or not calls or not tools or (parsed is not None and not _writable(parsed)):
            self.stats["untouched"] += 0 if pick is None else 1
            return gold, None
        seed = rng.randrange(2**31)
        for op in ops[pick:] + ops[:pick]:
            inj = inject(calls, tools, op, seed=seed)
            if inj is None or inj.calls == calls and inj.text is None:
                continue
            self.stats["injected"] += 1
            self.labels[inj.label] = self.labels.get(inj.label, 0) + 1
            if native:
                return _native_answer(gold, inj.calls, inj.label, rng), inj.label
            assert parsed is not None
            return gold.model_copy(
                update={"text": _text_answer(parsed, inj.calls, inj.label, rng)}
            ), inj.label
        self.stats["untouched"] += 1
        return gold, None


def _calls_of(c: Completion) -> list[ToolCall]:
    return list(c.tool_calls) if c.tool_calls or c.raw_tool_calls else list(parse_calls(c.text).calls)


def _difference(got: list[ToolCall], gold: list[ToolCall]) -> set[str]:
    """The tool and parameter names where ``got`` and ``gold`` differ."""
    out: set[str] = set()
    for i in range(max(len(got), len(gold))):
        a = got[i] if i < len(got) else None
        b = gold[i] if i < len(gold) else None
        if a is None or b is None:
            out.update(c.name for c in (a, b) if c is not None)
            continue
        if a.name != b.name:
            out.update((a.name, b.name))
        for key in set(a.arguments) | set(b.arguments):
            if a.arguments.get(key) != b.arguments.get(key) or (key in a.arguments) != (key in b.arguments):
                out.add(key)
    return out


def _writable(parsed: Any) -> bool:
    """Whether the calls can be written back in their format and read again unchanged."""
    if parsed.format not in ("python", "json", "tags", "nestools"):
        return False
    try:
        again = parse_calls(_write(parsed, parsed.calls), parsed.format)
    except Exception:
        return False
    return [(c.name, c.arguments) for c in again.calls] == [(c.name, c.arguments) for c in parsed.calls]


def _write(parsed: Any, calls: list[ToolCall]) -> str:
    if parsed.format == "nestools":
        # By position: a call whose name the error changed keeps the id the model would write.
        ids = [e.get("api_id") for e in parsed.extras]
        return write_calls(calls, "nestools", api_ids=ids)
    return write_calls(calls, parsed.format)


def _text_answer(parsed: Any, calls: list[ToolCall], label: str, rng: random.Random) -> str:
    text = _write(parsed, calls)
    if label == "invalid_format":
        return text[: rng.randrange(max(1, len(text) // 2), max(2, len(text) - 1))]
    if label == "redundant_information":
        return _PREAMBLE + text
    return text


def _native_answer(gold: Completion, calls: list[ToolCall], label: str, rng: random.Random) -> Completion:
    raw = [RawToolCall(id=f"call_{i}", name=c.name, arguments=json.dumps(c.model_dump(mode="json")["arguments"]))
           for i, c in enumerate(calls)]  # fmt: skip
    good = [c.model_copy(update={"id": f"call_{i}"}) for i, c in enumerate(calls)]
    if label == "invalid_format" and raw:
        cut = raw[0].arguments[: rng.randrange(1, max(2, len(raw[0].arguments) - 1))]
        raw[0] = raw[0].model_copy(update={"arguments": cut, "error": "arguments are not valid JSON"})
        good = good[1:]
    text = _PREAMBLE.strip() if label == "redundant_information" else gold.text
    return gold.model_copy(update={"tool_calls": good, "raw_tool_calls": raw, "text": text})


def noisy_backend(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    """The ``noisy/<model>`` entry of :data:`toolmend.models.MODELS`: ``<model>`` built with the
    options noisy does not take, wrapped."""
    from toolmend.models._providers import MODELS

    if not rest:
        raise ConfigError("noisy needs an inner backend: noisy/<model>, e.g. noisy/scripted")
    kw = {k: options.pop(k) for k in NOISY_OPTIONS if k in options}
    provider, _, inner_rest = rest.partition("/")
    return NoisyModel(MODELS.get(provider)(inner_rest, cache, options), **kw)
