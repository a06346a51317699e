"""Training data from gold trajectories, with every injected error verified.

Five kinds, each in TRL's standard conversational form, the offered tools in a ``tools`` column
(JSON text, which TRL's SFT and KTO trainers parse; text keeps Arrow from merging the schemas of
different tools into one struct with nulls):

==========  =============================================================================
``sft``     ``prompt`` (the task and earlier turns) → ``completion`` (the gold calls of the turn)
``kto``     ``prompt``, ``completion``, ``label``: each gold turn is desirable, and each
            HiTEC checklist corruption of it (one per applicable operator) is undesirable;
            the rows are shuffled after unpairing, because KTO reads its batches in order and
            an unshuffled file gives single-label batches (no KL contrast)
``refine``  ToolACE-R: ``prompt`` = task, first attempt, feedback → ``completion`` = the refined
            answer; only the completion is supervised. Already-correct attempts are kept, with
            the "keep it" answer
``reflect`` Tool-Reflection-Bench: a P1-P4 perturbed trajectory → ``<reflect>…</reflect>`` and
            the corrected calls; ``ground_truth`` holds that reply for the reward
``critique`` CriticTool-style critique turns written by the suite builder
==========  =============================================================================

**Turns.** A model answers one turn at a time: it sends calls, reads their results, then sends
the next calls with the values it read. So a gold trajectory whose later calls use earlier outputs
(:class:`~toolmend.Ref` values, NesTools-style) or must follow earlier calls through the world's
state is split into turns: a call goes in the first turn after every call it depends on. The gold
is played turn by turn in a fresh environment, which replaces each reference by the value the
earlier turn returned, and every row is one turn: the prompt holds the query, then each earlier
turn (the assistant's calls, then one ``{"role": "tool", "content": …}`` message per result), and
the completion holds that turn's calls with concrete values. kto and refine corrupt each turn's
calls; ``reflect`` plays the perturbed prefix turn by turn the same way. No prompt or completion
holds a placeholder. A trajectory of one turn gives one row per sample, as before.

Calls are written in one reply format (``tags`` by default: ``<tool_call>{json}</tool_call>``,
the format of Hermes/Qwen templates), the same for every kind, so that the rewards read what
the SFT data taught.

**Verification.** The gold must pass the checklist and execute (every response ``ok``), turn by
turn. A corruption is kept only when the checklist (or the call parser, for format errors)
reports one of the codes the operator intends, or — for errors a schema cannot see, such as a
wrong but existing tool — when executing it in the world (after the earlier gold turns) fails or
leaves a different state than the gold. Anything else is dropped and counted in
:attr:`BuildReport.dropped`; so is a ``reflect`` perturbation that has no concrete form
(``unresolvable:<operator>``: a call moved before, or left without, the call whose output it
needs, where a model would have had to invent the value).

>>> ds, report = build_dataset("kto", source="world", seed=0, limit=4, max_tools=4)
>>> sorted(set(ds["label"])), report.dropped.get("gold_failed", 0)
([False, True], 0)
>>> from toolmend import ERROR_CODES
>>> set(report.codes) <= set(ERROR_CODES) | {"correct"}
True
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, Field

from toolmend._errors import ConfigError
from toolmend._schema import Finding, Tool, ToolCall, dependencies, refs
from toolmend._version import __version__
from toolmend.benchmarks.critic._traces import Trace, load_traces
from toolmend.check import Checker, ungrounded
from toolmend.check._ground import Context
from toolmend.formats import parse_calls, to_openai_tool, write_calls
from toolmend.formats._result import CallFormat
from toolmend.guard import Turn
from toolmend.guard._reask import KEEP_IT, refine_reask, turn_findings
from toolmend.synth.inject import Injection, applicable, inject, operator_names
from toolmend.train._from_traces import TRACE_KINDS, trace_examples, trace_path

if TYPE_CHECKING:
    from datasets import Dataset

    from toolmend.env import Environment

__all__ = [
    "KINDS",
    "SOURCE_KINDS",
    "KEEP_IT",
    "BuildReport",
    "Kind",
    "build_dataset",
    "build_rows",
    "feedback_findings",
    "feedback_text",
    "gold_json",
    "verify_injection",
]

Kind = Literal["sft", "kto", "refine", "reflect", "critique"]
KINDS: tuple[Kind, ...] = get_args(Kind)

SOURCE_KINDS: dict[str, tuple[Kind, ...]] = {
    "world": KINDS,
    "bfcl": KINDS,
    "nestools": KINDS,
    "traces:DIR": TRACE_KINDS,
}
"""Which kinds each source builds. World tools execute, so schema-invisible corruptions are
verified by their outcome; BFCL and NesTools tools cannot run, so only corruptions the parser or
checklist sees are kept (and ``reflect`` shows schema-shaped simulated results); guard traces
hold no gold trajectory to perturb, so they build no ``reflect`` or ``critique`` data."""

CHECKER_VERSION = f"toolmend-{__version__}"
"""Written into every row's provenance: which checklist verified the label."""

REFLECT_INSTRUCTION = (
    "Some of the calls above may be wrong. Explain what went wrong inside <reflect>...</reflect>, "
    "then give the corrected remaining calls."
)


class BuildReport(BaseModel):
    """What a build kept and dropped: per-code balance, verification route and provenance."""

    kind: str
    source: str
    seed: int
    checker_version: str = CHECKER_VERSION
    rows: int = 0
    traces: int = 0
    codes: dict[str, int] = Field(default_factory=dict)
    """Rows per error code (``correct`` for gold rows)."""
    operators: dict[str, int] = Field(default_factory=dict)
    verified_by: dict[str, int] = Field(default_factory=dict)
    """How each injected error was verified: ``checker``, ``parser`` or ``world``."""
    dropped: dict[str, int] = Field(default_factory=dict)
    """Samples not written, by reason (``gold_failed``, ``unverified:<operator>`` …)."""
    turns: dict[str, int] = Field(default_factory=dict)
    """Rows per assistant turn of the gold they answer (``"0"``: the first reply; ``"1"``: the
    reply after the first turn's tool results …), for the world, BFCL and NesTools sources."""
    ground: bool = False
    """``refine`` feedback that also names values the conversation never mentions."""


@dataclass
class _Ctx:
    kind: str
    source: str
    seed: int
    fmt: CallFormat
    report: BuildReport
    rng: random.Random
    rows: list[dict[str, Any]] = field(default_factory=list)

    def feedback(
        self, attempt: str, checker: Checker, history: Sequence[Mapping[str, Any]], gold: str
    ) -> str:
        return feedback_text(attempt, checker, self.fmt, history if self.report.ground else None, gold)

    def drop(self, reason: str) -> None:
        self.report.dropped[reason] = self.report.dropped.get(reason, 0) + 1

    def add(
        self,
        row: dict[str, Any],
        trace: Trace,
        code: str,
        operator: str = "",
        sub_label: str = "",
        verified_by: str = "gold",
        turn: int | None = None,
    ) -> None:
        if self.kind != "kto":
            row.setdefault("gold_calls", gold_json(trace.calls))
        row.update(
            source=self.source,
            seed=self.seed,
            trace_id=trace.id,
            operator=operator,
            sub_label=sub_label,
            code=code,
            verified_by=verified_by,
            checker_version=CHECKER_VERSION,
        )
        self.rows.append(row)
        self.report.codes[code] = self.report.codes.get(code, 0) + 1
        if operator:
            self.report.operators[operator] = self.report.operators.get(operator, 0) + 1
        if turn is not None:
            self.report.turns[str(turn)] = self.report.turns.get(str(turn), 0) + 1

    def verified(self, how: str) -> None:
        """Count the verification route of an injection that made a row."""
        self.report.verified_by[how] = self.report.verified_by.get(how, 0) + 1


def _offered(trace: Trace, max_tools: int | None, rng: random.Random) -> list[Tool]:
    """The gold calls' tools plus seeded distractors, up to ``max_tools`` (all when ``None``)."""
    if max_tools is None or len(trace.tools) <= max_tools:
        return list(trace.tools)
    used = {c.name for c in trace.calls}
    others = [t for t in trace.tools if t.name not in used]
    keep = used | {t.name for t in rng.sample(others, max(0, min(len(others), max_tools - len(used))))}
    return [t for t in trace.tools if t.name in keep]


def gold_json(calls: Sequence[ToolCall]) -> str:
    """The ``gold_calls`` column: the gold calls as JSON text (what the call-match reward reads)."""
    return json.dumps([c.model_dump(mode="json", exclude_defaults=True) for c in calls], ensure_ascii=False)


def _tools_json(tools: Sequence[Tool]) -> str:
    # Keys in to_openai_tool's order, not sorted: chat templates render them as they come
    # (``tojson`` keeps the order), and the hf/ backend renders to_openai_tool's dicts, so a
    # model trained on this column sees the same prompt when it is sampled or benchmarked.
    return json.dumps([to_openai_tool(t) for t in tools], ensure_ascii=False)


def _fingerprint(trace: Trace, calls: Sequence[ToolCall]) -> tuple[bool, str]:
    """Run ``calls`` in a fresh environment (no checker in the way): whether all succeeded, and
    the outcome (the responses and, for the world, the end state)."""
    env = trace.make_env()
    env.checker = None
    responses = env.run(calls)
    state = env.context.get("state")
    outcome = {
        "responses": [r.content for r in responses],
        "state": state.model_dump(mode="json") if state else None,
    }
    return all(r.ok for r in responses), json.dumps(outcome, sort_keys=True, default=str)


def _turn_indices(calls: Sequence[ToolCall], after: Mapping[int, Sequence[int]]) -> list[list[int]]:
    """The gold calls split into assistant turns (call indices, in order): a call goes in the
    first turn after every call it depends on (:attr:`toolmend.world.Task.levels`).

    >>> from toolmend import Ref
    >>> calls = [ToolCall(name="a", outputs=["API_call_0"]), ToolCall(name="b"),
    ...          ToolCall(name="c", arguments={"x": Ref(target="API_call_0")})]
    >>> _turn_indices(calls, {}), _turn_indices(calls, {1: [0]})
    ([[0, 1], [2]], [[0], [1, 2]])
    """
    levels: list[int] = []
    for deps in dependencies(calls, after=after):
        levels.append(1 + max(levels[d] for d in deps) if deps else 0)
    return [[i for i, lv in enumerate(levels) if lv == k] for k in range(max(levels, default=-1) + 1)]


@dataclass
class _Turn:
    """One assistant turn of the gold as a model sends it: the calls with concrete values (each
    :class:`~toolmend.Ref` replaced by what an earlier turn returned) and the results."""

    calls: list[ToolCall]
    results: list[str]


def _gold_turns(trace: Trace, checker: Checker) -> list[_Turn] | None:
    """Play the gold turn by turn in a fresh environment: each turn's calls resolved by the
    environment against what the earlier turns returned, checked by the checklist and executed.
    ``None`` when a call cannot be resolved, fails the checklist or does not succeed."""
    env = trace.make_env()
    turns: list[_Turn] = []
    for indices in _turn_indices(trace.calls, trace.after):
        resolved = [env.resolved(trace.calls[i]) for i in indices]
        calls = [c for c in resolved if c is not None]
        if len(calls) < len(resolved) or checker.check(calls, expected_count=len(calls)):
            return None
        responses = env.run(calls)
        if not all(r.ok for r in responses):
            return None
        turns.append(_Turn(calls, [r.content for r in responses]))
    return turns


def _played(turns: Sequence[_Turn]) -> list[ToolCall]:
    return [c for t in turns for c in t.calls]


def _turn_state(trace: Trace, turns: Sequence[_Turn], k: int) -> str | None:
    """The world outcome of the gold up to and including turn ``k`` (``None`` off the world)."""
    return _fingerprint(trace, _played(turns[: k + 1]))[1] if trace.source == "world" else None


def verify_injection(
    inj: Injection,
    trace: Trace,
    checker: Checker,
    gold_state: str | None,
    prefix: Sequence[ToolCall] = (),
) -> str | None:
    """How the corruption was verified (``parser``, ``checker`` or ``world``), or ``None`` when
    it cannot be shown to be the intended error.

    An error a schema can see (``Injection.detectable``) must be reported by the checklist with
    an intended code. One it cannot see (a wrong but existing tool, an unrequested optional
    parameter) counts only when running it in the world fails or changes the outcome (the
    responses or the end state) against the gold; a corruption that changes nothing is no error.
    ``prefix`` are the gold calls of the earlier turns, run before the corrupted turn; then
    ``gold_state`` is the outcome of ``prefix`` followed by the gold turn.
    """
    wanted = set(inj.expected_codes)
    if inj.text is not None:
        parsed = parse_calls(inj.text)
        codes = {f.code for f in parsed.findings}
        codes |= {f.code for f in checker.check(parsed.calls, expected_count=inj.expected_count)}
        return "parser" if wanted & codes else None
    codes = {f.code for f in checker.check(inj.calls, expected_count=inj.expected_count)}
    if wanted & codes:
        return "checker"
    if inj.detectable or gold_state is None or trace.source != "world":
        # The checklist should have seen it and did not, or nothing can execute it for real.
        return None
    ok, state = _fingerprint(trace, [*prefix, *inj.calls])
    return "world" if not ok or state != gold_state else None


def _code(inj: Injection) -> str:
    return inj.expected_codes[0] if inj.expected_codes else inj.label


def feedback_text(
    attempt: str,
    checker: Checker,
    fmt: CallFormat = "tags",
    context: Context | None = None,
    gold: str | None = None,
) -> str:
    """The feedback a refine sample shows after the first attempt: the ``self-refine`` strategy's
    re-ask, so that a refine-trained model is asked at inference what it was trained on. With the
    conversation before the attempt as ``context``, the re-ask of ``-S ground=true``; a value that
    the ``gold`` answer holds too (a computed end time, a composed title) is not named, so that
    the feedback a model learns from is never wrong."""
    turn = Turn.from_text(attempt, fmt)
    return refine_reask(turn, checker, found=feedback_findings(turn, checker, fmt, context, gold))


def feedback_findings(
    turn: Turn,
    checker: Checker,
    fmt: CallFormat = "tags",
    context: Context | None = None,
    gold: str | None = None,
) -> list[Finding]:
    """What :func:`feedback_text` names for ``turn``: :func:`~toolmend.guard._reask.turn_findings`,
    less any value not in ``context`` that the ``gold`` answer holds too."""
    found = turn_findings(turn, checker, context)
    if context is not None and gold is not None:
        right = {
            f.data["value"] for f in ungrounded(Turn.from_text(gold, fmt).tool_calls(), context, checker)
        }
        found = [f for f in found if not (f.data.get("ungrounded") and f.data["value"] in right)]
    return found


def _injections(
    ctx: _Ctx,
    calls: Sequence[ToolCall],
    trace: Trace,
    checker: Checker,
    operators: Sequence[str],
    gold_state: str | None,
    prefix: Sequence[ToolCall] = (),
    every_step: bool = False,
) -> Iterator[tuple[str, Injection, str]]:
    """Verified injections into ``calls``: one seeded step per operator, or every applicable
    step. The caller counts the verification route of each one it keeps (:meth:`_Ctx.verified`)."""
    for op in operators:
        steps: list[int | None] = list(applicable(op, calls, checker)) if every_step else [None]
        for step in steps:
            inj = inject(calls, checker, op, seed=ctx.rng.randrange(2**31), step=step)
            if inj is None:
                continue  # not applicable: nothing planned, nothing dropped
            how = verify_injection(inj, trace, checker, gold_state, prefix)
            if how is None:
                ctx.drop(f"unverified:{op}")
                continue
            yield op, inj, how


def _user(trace: Trace) -> list[dict[str, str]]:
    return [{"role": "user", "content": trace.query}]


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def _exchange(calls: Sequence[ToolCall], results: Sequence[str], fmt: CallFormat) -> list[dict[str, str]]:
    """An assistant turn's calls and the tool messages that answer them, one per call."""
    return [*_assistant(write_calls(calls, fmt)), *({"role": "tool", "content": r} for r in results)]


def _history(trace: Trace, turns: Sequence[_Turn], fmt: CallFormat) -> list[dict[str, str]]:
    """The prompt of the turn after ``turns``: the query, then each earlier turn and its results."""
    out = _user(trace)
    for t in turns:
        out += _exchange(t.calls, t.results, fmt)
    return out


def _sft(ctx: _Ctx, trace: Trace, tools: str, checker: Checker, turns: list[_Turn]) -> None:
    for k, turn in enumerate(turns):
        ctx.add({"prompt": _history(trace, turns[:k], ctx.fmt), "completion": _assistant(write_calls(turn.calls, ctx.fmt)),
                 "tools": tools, "gold_calls": gold_json(turn.calls)}, trace, "correct", turn=k)  # fmt: skip


def _kto(ctx: _Ctx, trace: Trace, tools: str, checker: Checker, turns: list[_Turn]) -> None:
    for k, turn in enumerate(turns):
        gold = write_calls(turn.calls, ctx.fmt)
        # HiTEC-KTO: every gold call corrupted by every checklist error that applies to it.
        for op, inj, how in _injections(ctx, turn.calls, trace, checker, operator_names("hitec"),
                                        _turn_state(trace, turns, k), _played(turns[:k]), every_step=True):  # fmt: skip
            ctx.verified(how)
            bad = inj.text if inj.text is not None else write_calls(inj.calls, ctx.fmt)
            # One desirable row per negative keeps the two classes balanced, as HiTEC's pairs are.
            ctx.add({"prompt": _history(trace, turns[:k], ctx.fmt), "completion": _assistant(gold), "label": True,
                     "tools": tools}, trace, "correct", op, inj.sub_label, turn=k)  # fmt: skip
            ctx.add({"prompt": _history(trace, turns[:k], ctx.fmt), "completion": _assistant(bad), "label": False,
                     "tools": tools}, trace, _code(inj), op, inj.sub_label, how, turn=k)  # fmt: skip


def _refine(ctx: _Ctx, trace: Trace, tools: str, checker: Checker, turns: list[_Turn]) -> None:
    ops = operator_names("hitec") + operator_names("critictool")
    for k, turn in enumerate(turns):
        gold = write_calls(turn.calls, ctx.fmt)
        gold_calls = gold_json(turn.calls)
        chosen = [ctx.rng.choice(ops)]
        state = _turn_state(trace, turns, k)
        history = _history(trace, turns[:k], ctx.fmt)
        for op, inj, how in _injections(ctx, turn.calls, trace, checker, chosen, state, _played(turns[:k])):
            ctx.verified(how)
            first = inj.text if inj.text is not None else write_calls(inj.calls, ctx.fmt)
            prompt = [
                *history,
                *_assistant(first),
                {"role": "user", "content": ctx.feedback(first, checker, history, gold)},
            ]
            ctx.add({"prompt": prompt, "completion": _assistant(gold), "tools": tools, "gold_calls": gold_calls},
                    trace, _code(inj), op, inj.sub_label, how, turn=k)  # fmt: skip
        # ToolACE-R keeps already-correct attempts too, answered with "keep it".
        prompt = [
            *history,
            *_assistant(gold),
            {"role": "user", "content": ctx.feedback(gold, checker, history, gold)},
        ]
        ctx.add({"prompt": prompt, "completion": _assistant(KEEP_IT), "tools": tools,
                 "gold_calls": gold_calls}, trace, "correct", turn=k)  # fmt: skip


def _prefix_turns(trace: Trace, inj: Injection, turns: list[list[int]]) -> list[list[ToolCall]]:
    """The perturbed prefix as the assistant turns a model would have taken: the gold calls before
    the broken step in their own turns, the corrupted call(s) joining the last of them unless they
    use one of its outputs (then they come a turn later)."""
    groups = [[trace.calls[i] for i in indices if i < inj.step] for indices in turns]
    groups = [g for g in groups if g]
    broken = list(inj.corrupted)
    if not broken:
        return groups
    produced = {o for c in groups[-1] for o in c.outputs} if groups else set()
    if groups and not produced & {r.head for c in broken for _, r in refs(c.arguments)}:
        return [*groups[:-1], groups[-1] + broken]
    return [*groups, broken]


_DANGLING = re.compile(r"API_call_\d+(?:, API_call_\d+)* now refer to nothing")


def _plain(description: str) -> str:
    """An operator's description without placeholder names, which a model never sees.

    >>> _plain("skipped the call to f; API_call_0, API_call_2 now refer to nothing")
    'skipped the call to f; the later calls that need its result lack their input'
    """
    text = _DANGLING.sub("the later calls that need its result lack their input", description)
    return re.sub(r"API_call_\d+", "an earlier result", text)


def _reflect(ctx: _Ctx, trace: Trace, tools: str, checker: Checker, turns: list[_Turn]) -> None:
    """The perturbed prefix played turn by turn with concrete values, then the reflection and the
    calls of the next turn (the gold calls from the broken step on whose inputs are all known).

    A perturbation whose prefix uses an output nothing has produced yet (a swapped or dropped
    producer) has no concrete form, since a model would have had to invent the value; it is
    dropped as ``unresolvable:<operator>``."""
    order = _turn_indices(trace.calls, trace.after)
    deps = dependencies(trace.calls, after=trace.after)
    gold_state = _fingerprint(trace, trace.calls)[1] if trace.source == "world" else None
    for op, inj, how in _injections(
        ctx, trace.calls, trace, checker, operator_names("reflection"), gold_state
    ):
        env = trace.make_env()
        env.checker = None
        prompt = _user(trace)
        groups = _prefix_turns(trace, inj, order)
        for group in groups:
            calls = [env.resolved(c) for c in group]
            if None in calls:
                break
            played = [c for c in calls if c is not None]
            prompt += _exchange(played, [r.content for r in env.run(played)], ctx.fmt)
        else:
            done = set(range(inj.step))  # inj.calls[: inj.step] are the gold calls before the broken step
            resolved = [
                env.resolved(c) for j, c in enumerate(trace.calls) if j >= inj.step and deps[j] <= done
            ]
            fix = [c for c in resolved if c is not None]
            if len(fix) == len(resolved):
                ctx.verified(how)
                prompt.append({"role": "user", "content": REFLECT_INSTRUCTION})
                answer = f"<reflect>{_plain(inj.description)}</reflect>{write_calls(fix, ctx.fmt)}"
                ctx.add({"prompt": prompt, "completion": _assistant(answer), "ground_truth": answer, "tools": tools,
                         "gold_calls": gold_json(fix)},
                        trace, _code(inj), op, inj.sub_label, how, turn=len(groups))  # fmt: skip
                continue
        ctx.drop(f"unresolvable:{op}")


_BUILDERS: dict[str, Callable[[_Ctx, Trace, str, Checker, list[_Turn]], None]] = {
    "sft": _sft,
    "kto": _kto,
    "refine": _refine,
    "reflect": _reflect,
}


def _no_env(faults: Any = None) -> Environment:
    raise ConfigError("critique samples were already executed by the suite builder")


def _critique(ctx: _Ctx, limit: int | None, data: Path | None, max_tools: int | None) -> None:
    """CriticTool samples from the suite builder, rewritten in this dataset's reply format: the
    CriticTool system prompt (its own action format and tool list) gives way to the ``tools``
    column, and the history's actions are written as calls like every other turn."""
    import tempfile

    from toolmend.benchmarks.critic import build_suite
    from toolmend.benchmarks.critictool._records import load_critictool

    with tempfile.TemporaryDirectory() as tmp:
        info = build_suite(ctx.source, seed=ctx.seed, out=Path(tmp), limit=limit, data=data)
        samples = load_critictool(tmp, external_modes=("skip",))
    # `skipped`: samples the builder could not plan; `dropped` (suite builders with label checks):
    # samples whose label failed its check. Both are drops of this dataset too.
    for reason, n in [*info.skipped.items(), *getattr(info, "dropped", {}).items()]:
        ctx.report.dropped[reason] = ctx.report.dropped.get(reason, 0) + n
    ctx.report.traces = info.traces
    for s in samples:
        prompt: list[dict[str, str]] = []
        used = {c.name for c in s.target}
        for m in s.messages:
            if m.role == "system":
                continue
            calls = parse_calls(m.content).calls if m.role == "assistant" else []
            used |= {c.name for c in calls}
            prompt.append({"role": m.role, "content": write_calls(calls, ctx.fmt) if calls else m.content})
        trace = Trace(s.id, "", s.tools, [ToolCall(name=n) for n in sorted(used)], ctx.source, _no_env)
        answer = write_calls(s.target, ctx.fmt) if s.target else str(s.metadata.get("gold") or "FinishAction")
        label = str(s.metadata.get("error_type") or "error_free")
        row = {"prompt": prompt, "completion": _assistant(answer), "tools": _tools_json(_offered(trace, max_tools, ctx.rng)),
               "gold_calls": gold_json(s.target)}  # fmt: skip
        ctx.add(row, trace, label, "critic_suite", label, "critic_suite")


def _from_traces(ctx: _Ctx, path: Path, limit: int | None) -> None:
    """Rows from ``toolmend serve`` traces (see :mod:`toolmend.train._from_traces`)."""
    for trace_id, prompt, tools, outcome, good, bad in trace_examples(path, ctx.fmt, limit):
        ctx.report.traces += 1
        if not tools:
            ctx.drop("no_tools")
            continue
        if good is not None and good.findings:
            ctx.drop("gold_failed")
            good = None
        if bad is not None and bad.verified_by is None:
            ctx.drop(f"unverified:guard_{outcome}")
            bad = None
        if ctx.kind == "refine" and outcome != "accepted" and bad is None:
            continue  # nothing to refine from
        if bad is not None and bad.verified_by and (ctx.kind == "kto" or (ctx.kind == "refine" and good)):
            ctx.verified(bad.verified_by)
        tools_json = _tools_json(tools)
        trace = Trace(trace_id, "", tools, good.calls if good is not None else [], ctx.source, _no_env)
        op = f"guard:{outcome}"
        if ctx.kind == "sft" and good is not None:
            ctx.add(
                {"prompt": prompt, "completion": _assistant(good.text), "tools": tools_json},
                trace,
                "correct",
                op,
            )
        elif ctx.kind == "kto":
            if good is not None:
                row = {
                    "prompt": prompt,
                    "completion": _assistant(good.text),
                    "label": True,
                    "tools": tools_json,
                }
                ctx.add(row, trace, "correct", op)
            if bad is not None:
                row = {
                    "prompt": prompt,
                    "completion": _assistant(bad.text),
                    "label": False,
                    "tools": tools_json,
                }
                ctx.add(row, trace, bad.findings[0].code, op, verified_by=bad.verified_by or "")
        elif ctx.kind == "refine" and good is not None:
            first = good if bad is None else bad
            turns = [
                *prompt,
                *_assistant(first.text),
                {"role": "user", "content": ctx.feedback(first.text, Checker(tools), prompt, good.text)},
            ]
            answer = good.text if bad is not None else KEEP_IT
            code = bad.findings[0].code if bad is not None else "correct"
            how = (bad.verified_by or "") if bad is not None else "gold"
            ctx.add({"prompt": turns, "completion": _assistant(answer), "tools": tools_json}, trace, code, op,
                    verified_by=how)  # fmt: skip


def build_rows(
    kind: Kind | str,
    *,
    source: str = "world",
    seed: int = 0,
    limit: int | None = None,
    max_tools: int | None = None,
    reply_format: CallFormat = "tags",
    data: str | Path | None = None,
    ground: bool = False,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], BuildReport]:
    """The rows of a ``kind`` dataset and the report (no ``datasets`` import needed).

    ``limit`` caps the gold trajectories used; ``max_tools`` offers only the gold calls' tools
    plus seeded distractors up to that many (the world offers 50 tools otherwise). ``ground``
    (``refine`` only): the feedback of ``self-refine -S ground=true``, which also names the
    values the conversation never mentions (:func:`toolmend.check.ungrounded`). ``offset`` skips
    that many gold trajectories first (``bfcl`` lists its multi-call categories first).
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown dataset kind {kind!r}; expected one of {', '.join(KINDS)}")
    if ground and kind != "refine":
        raise ConfigError(f"ground applies to refine data (its feedback), not to {kind}")
    key = "traces:DIR" if source.startswith("traces:") else source
    if key not in SOURCE_KINDS:
        raise ConfigError(f"unknown trajectory source {source!r}; expected {', '.join(SOURCE_KINDS)}")
    if kind not in SOURCE_KINDS[key]:
        raise ConfigError(
            f"the traces: source builds {', '.join(TRACE_KINDS)} data; {kind} needs gold trajectories "
            "with executed steps (use --source world, bfcl or nestools)"
        )
    report = BuildReport(kind=kind, source=source, seed=seed, ground=ground)
    ctx = _Ctx(
        kind, source, seed, reply_format, report, random.Random(f"toolmend-train:{kind}:{source}:{seed}")
    )
    if offset and (source.startswith("traces:") or kind == "critique"):
        raise ConfigError(f"offset applies to gold trajectories, not to {source} {kind} data")
    if source.startswith("traces:"):
        _from_traces(ctx, trace_path(source), limit)
    elif kind == "critique":
        _critique(ctx, limit, Path(data) if data is not None else None, max_tools)
    else:
        traces = load_traces(source, seed=seed, data=data)[offset:]
        traces = traces[:limit] if limit is not None else traces
        report.traces = len(traces)
        build = _BUILDERS[kind]
        for trace in traces:
            tools = _offered(trace, max_tools, ctx.rng)
            trace = dataclasses.replace(trace, tools=tools)
            checker = Checker(tools)
            turns = _gold_turns(trace, checker)
            if turns is None:
                ctx.drop("gold_failed")
                continue
            build(ctx, trace, _tools_json(tools), checker, turns)
    if kind == "kto":
        random.Random(seed).shuffle(ctx.rows)
    report.rows = len(ctx.rows)
    report.codes = dict(Counter(report.codes).most_common())
    report.turns = dict(sorted(report.turns.items(), key=lambda kv: int(kv[0])))
    return ctx.rows, report


def build_dataset(kind: Kind | str, **options: Any) -> tuple[Dataset, BuildReport]:
    """:func:`build_rows` as a :class:`datasets.Dataset` (needs the ``train`` extra)."""
    from toolmend.train._deps import require

    require("datasets")
    from datasets import Dataset

    rows, report = build_rows(kind, **options)
    if not rows:
        raise ConfigError(
            f"no {kind} rows were built from {report.source!r}; dropped: {report.dropped or 'none'}"
        )
    return Dataset.from_list(rows), report
