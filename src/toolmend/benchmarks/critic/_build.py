"""Build a CriticTool-style critique suite from gold trajectories.

For each trajectory (in a seeded order) the builder first replays the gold calls in a fresh
environment, which resolves every ``API_call_n`` reference into the value an earlier call really
returned, and then writes:

- one **error-injected** internal sample: a CriticTool operator (tool selection, tool
  hallucination, parameter key, parameter value, in turn) corrupts step *k*; the history holds the
  gold steps before *k*, the corrupted call and the response the environment gives it (real
  execution for the world; the simulator's value or the checker-derived error body otherwise);
  the gold answer is the correct step *k*, the label the operator's;
- every ``error_free_every``-th trajectory, one **error-free** internal sample: gold steps up to
  *k* with their responses; the gold answer is step *k+1*, or ``FinishAction`` after the last;
- **external** samples, as many as every ``external_every``-th trajectory would give: step *k*
  is right but the environment fails it (timeout, rate limit, permission denied, service
  unavailable, connection reset, in turn); the gold answer is ``[the failed call, the next step
  that does not need its output]``, or ``FinishAction`` when every later step needs it. The
  faults are *balanced*: they go first to steps that leave an independent next subtask, so that
  a fixed "retry, then finish" policy cannot score well; :attr:`SuiteInfo.finish_share` reports
  the FinishAction share that remains.

Every planned sample then passes the label checks of :mod:`toolmend.benchmarks.critic._verify`
(the corrupted call really is an error of its label, the gold really executes) or is dropped and
counted. ``variant="evolved"`` first evolves each trajectory by CriticTool's SRM strategies
(:mod:`toolmend.benchmarks.critic._evolve`) and runs the checks in the evolved environment, so a
sample whose label drifted is dropped too.

Files follow the official layout, ``{internal_error,external_error}/{base,evol}_data_{wo,w}_cot.json``,
one JSON object id → record with sorted keys, so :func:`toolmend.benchmarks.critictool.load_critictool`
reads them unchanged. The same ``seed`` always writes the same bytes. Records carry a ``toolmend``
field (operator, sub-label, step, fault, domain, evolution) for analysis; the official code ignores it, and the
checklist critic never sees it.

>>> info = build_suite("world", seed=0, out=tmp_path, limit=12)
>>> sum(info.internal.values()) > 0 and sum(info.external.values()) > 0
True
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolmend._errors import ConfigError
from toolmend._jsontext import dumps
from toolmend._schema import Tool, ToolCall, dependencies, resolve
from toolmend.benchmarks.critic._evolve import PLANS, Hardener, Toolbox, domain, evolve_trace, rewrite_queries
from toolmend.benchmarks.critic._record import SYSTEM_TEMPLATE, action_args, action_text, system_prompt
from toolmend.benchmarks.critic._traces import Source, Trace, load_traces
from toolmend.benchmarks.critic._verify import CHECKS, Planned, check_sample, query_keeps_gold
from toolmend.benchmarks.critictool._records import FINISH, data_file
from toolmend.check import Checker
from toolmend.env import FAULT_KINDS, Environment, FaultPlan, FaultRule, ToolResponse
from toolmend.synth.inject import InjectContext, inject

__all__ = ["INTERNAL_OPERATORS", "VARIANTS", "SuiteInfo", "build_suite", "finish_message"]

VARIANTS: tuple[str, ...] = ("base", "evolved")
"""The suite variants: CriticTool's base data, and its SRM-evolved data (files ``evol_data_*``)."""

INTERNAL_OPERATORS: tuple[str, ...] = (
    "tool_selection",
    "tool_hallucination",
    "parameter_key",
    "parameter_value",
)
"""The injection operators of CriticTool's four internal error categories, used in turn."""

_RESPONSE_LIMIT = 2000  # characters of a tool response kept in the history


class SuiteInfo(BaseModel):
    """What :func:`build_suite` wrote: counts per error type and fault kind, and the file paths."""

    source: str
    seed: int
    variant: str = "base"
    tools: str = "all"
    """``all``, or ``domain``: each world trajectory offered its domains' tools and a few others."""
    root: Path
    traces: int
    """Trajectories used (after ``limit``)."""
    internal: dict[str, int] = Field(default_factory=dict)
    """Internal samples per error type; ``error_free`` counts the error-free ones."""
    external: dict[str, int] = Field(default_factory=dict)
    """External samples per fault kind."""
    skipped: dict[str, int] = Field(default_factory=dict)
    """Why some samples were never planned (``gold_failed``: the gold does not replay;
    ``no_operator``: no injection operator applies)."""
    planned: int = 0
    """Samples planned, before the label checks."""
    dropped: dict[str, int] = Field(default_factory=dict)
    """Planned samples dropped, per failed label check (:data:`.verify.CHECKS`)."""
    finish_share: float = 0.0
    """Share of external samples whose gold next step is ``FinishAction`` (no next subtask)."""
    evolution: dict[str, int] = Field(default_factory=dict)
    """Evolved variant: trajectories per evolution (a strategy, or ``mixed``)."""
    query_sources: dict[str, int] = Field(default_factory=dict)
    """Evolved variant: who wrote the noisy requests (``rule``, ``model``, ``fallback``)."""
    fallbacks: dict[str, int] = Field(default_factory=dict)
    """Why a model's rewrite was rejected (and the rule used instead), per reason."""
    files: list[Path] = Field(default_factory=list)

    @property
    def total(self) -> int:
        """Records written (each external record is scored in skip and finish mode)."""
        return sum(self.internal.values()) + sum(self.external.values())


@dataclass
class _Replay:
    """A gold trajectory with references resolved and the responses each step got."""

    calls: list[ToolCall]
    responses: list[ToolResponse]
    deps: list[set[int]]


def _replay(trace: Trace, tools: dict[str, Tool]) -> _Replay:
    """Run the gold calls; stop before the first one that fails (bad gold data)."""
    env = trace.make_env()
    calls: list[ToolCall] = []
    responses: list[ToolResponse] = []
    for call in trace.calls:
        try:
            args = resolve(call.arguments, env.bindings)
        except (KeyError, IndexError, TypeError, ValueError):
            break
        concrete = ToolCall(
            name=call.name,
            arguments=action_args(args, tools.get(call.name)),
            outputs=call.outputs,
            output_fields=call.output_fields,
        )
        response = env.execute(concrete)
        if not response.ok:
            break
        calls.append(concrete)
        responses.append(response)
    return _Replay(calls, responses, dependencies(trace.calls[: len(calls)], transitive=True))


def _short(text: str) -> str:
    return text if len(text) <= _RESPONSE_LIMIT else text[:_RESPONSE_LIMIT] + " ...(truncated)"


def _thought(call: ToolCall, tools: dict[str, Tool]) -> str:
    tool = tools.get(call.name)
    purpose = (tool.description if tool else "").split(". ")[0].rstrip(".")
    return f"Call {call.name}" + (f": {purpose[:1].lower()}{purpose[1:]}" if purpose else "")


def finish_message(failed: ToolCall, response: ToolResponse) -> str:
    """The gold ``FinishAction`` answer after an unrecoverable failure with nothing left to do."""
    reason = response.data.get("error", {}).get("message") if isinstance(response.data, dict) else None
    return (
        f"I could not complete the request: the call to {failed.name} failed"
        + (f" ({reason})" if reason else "")
        + ". Everything that did not depend on it is done."
    )


def _done_message(response: ToolResponse) -> str:
    return "All steps are done. The last result was: " + _short(response.content)[:300]


class _Writer:
    """Accumulates records for the four files."""

    def __init__(self, template: str) -> None:
        self.template = template
        # System prompt per distinct tool list: traces of one source mostly offer the same Tool
        # objects, and rendering 50 tools as JSON for each of their records dominated building.
        # Keyed by object identity; the tools are kept in the value so that no id is reused.
        self._systems: dict[tuple[int, ...], tuple[list[Tool], str]] = {}
        self.internal: dict[str, dict[str, dict[str, Any]]] = {"wo": {}, "w": {}}
        self.external: dict[str, dict[str, dict[str, Any]]] = {"wo": {}, "w": {}}

    def add(
        self,
        part: dict[str, dict[str, dict[str, Any]]],
        rid: str,
        trace: Trace,
        history: list[tuple[ToolCall, str, str]],
        truth: list[tuple[str, Any, str]],
        extra: dict[str, Any],
    ) -> None:
        system = self.system(trace.tools)
        for cot, key in ((False, "wo"), (True, "w")):
            messages: list[dict[str, str]] = [
                {"role": "system", "content": system},
                *trace.context,
                {"role": "user", "content": trace.query},
            ]
            for call, thought, content in history:
                text = action_text(call.name, call.arguments, thought if cot else None)
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "function", "content": content},
                ]
            actions = [
                {"name": name, "args": args, **({"thought": thought} if cot else {})}
                for name, args, thought in truth
            ]
            record: dict[str, Any] = {"query_prompt": messages, "toolmend": extra}
            if "error_type" in extra:
                record["ground_truth"] = actions[0]
                record["error_type"] = extra["error_type"]
            else:
                record["ground_truth"] = actions
            part[key][rid] = record

    def system(self, tools: list[Tool]) -> str:
        key = tuple(id(t) for t in tools)
        if key not in self._systems:
            self._systems[key] = (list(tools), system_prompt(tools, self.template))
        return self._systems[key][1]


def _history(replay: _Replay, upto: int, tools: dict[str, Tool]) -> list[tuple[ToolCall, str, str]]:
    return [
        (replay.calls[i], _thought(replay.calls[i], tools), _short(replay.responses[i].content))
        for i in range(upto)
    ]


def _run_prefix(trace: Trace, replay: _Replay, k: int, faults: FaultPlan | None = None) -> Environment:
    env = trace.make_env(faults)
    for call in replay.calls[:k]:
        env.execute(call)
    return env


def _rid(*parts: object) -> str:
    return "-".join(str(p) for p in parts).replace(".", "_").replace("/", "_")


@dataclass
class _Entry:
    """A trajectory whose gold replays, with the samples planned on it."""

    index: int
    trace: Trace
    replay: _Replay
    plans: list[Planned]


def _plan_internal(
    entry: _Entry, seed: int, error_free_every: int, inject: Any, inject_context: Any, skipped: Counter[str]
) -> None:
    """Plan the trajectory's error-injected sample and, every ``error_free_every``-th, an error-free one."""
    trace, replay, index = entry.trace, entry.replay, entry.index
    rng = random.Random(f"toolmend.critic:{seed}:{trace.id}")
    sample_seed = rng.randrange(2**31)
    # Error-injected: operators in turn, the next one when one does not apply.
    context = inject_context(query=trace.query)
    injection = None
    for shift in range(len(INTERNAL_OPERATORS)):
        operator = INTERNAL_OPERATORS[(index + shift) % len(INTERNAL_OPERATORS)]
        injection = inject(replay.calls, trace.tools, operator, seed=sample_seed, context=context)
        if injection is not None and injection.corrupted:
            break
    if injection is None or not injection.corrupted:
        skipped["no_operator"] += 1
    else:
        wrong = injection.corrupted[0].model_copy(update={"outputs": [], "output_fields": [], "id": None})
        extra = {
            "error_type": injection.label,
            "operator": injection.operator,
            "sub_label": injection.sub_label,
            "detectable": injection.detectable,
            "expected_codes": list(injection.expected_codes),
        }
        entry.plans.append(Planned("error", injection.step, injection.label, wrong=wrong, extra=extra))
    if error_free_every and index % error_free_every == 0:
        entry.plans.append(Planned("ok", rng.randrange(len(replay.calls)), "", extra={"error_type": ""}))


def _skippable(replay: _Replay) -> list[int]:
    """Steps after which the trajectory has a subtask that does not need their output."""
    n = len(replay.calls)
    return [s for s in range(n) if any(s not in replay.deps[j] for j in range(s + 1, n))]


def _plan_external(entries: Sequence[_Entry], source: str, seed: int, every: int) -> None:
    """Faults at as many steps as every ``every``-th trajectory would get, *balanced*: first one
    step in each trajectory that has a next subtask independent of it (so the gold is [retry,
    that call]); then trajectories without one (gold [retry, FinishAction]); further steps of the
    first kind only if the budget is still not met."""
    if not every:
        return
    budget = sum(1 for e in entries if e.index % every == 0)
    rng = random.Random(f"toolmend.critic.external:{source}:{seed}")
    order = list(entries)
    rng.shuffle(order)
    steps = {id(e): rng.sample(_skippable(e.replay), len(_skippable(e.replay))) for e in order}
    picks = [(e, steps[id(e)].pop()) for e in order if steps[id(e)]]
    picks += [(e, rng.randrange(len(e.replay.calls))) for e in order if not _skippable(e.replay)]
    while len(picks) < budget and any(steps.values()):
        picks += [(e, steps[id(e)].pop()) for e in order if steps[id(e)]]
    for number, (e, k) in enumerate(picks[:budget]):
        n = len(e.replay.calls)
        later = [j for j in range(k + 1, n) if k not in e.replay.deps[j]]
        kind = FAULT_KINDS[number % len(FAULT_KINDS)]
        e.plans.append(Planned("env", k, kind, next_step=later[0] if later else None, extra={"fault": kind}))


def _fault_plan(calls: Sequence[ToolCall], k: int, kind: str, seed: int) -> FaultPlan:
    number = sum(1 for c in calls[: k + 1] if c.name == calls[k].name)
    return FaultPlan(seed=seed, rules=[FaultRule(kind=kind, tool=calls[k].name, calls=[number])])


def _write_plan(
    writer: _Writer, trace: Trace, replay: _Replay, plan: Planned, seed: int, common: dict[str, Any]
) -> str:
    """Write one checked sample; returns the key it is counted under."""
    tools = {t.name: t for t in trace.tools}
    calls, k = replay.calls, plan.k
    extra = {**plan.extra, "step": k, **common}
    truth: list[tuple[str, Any, str]]
    if plan.kind == "error":
        assert plan.wrong is not None
        response = _run_prefix(trace, replay, k).execute(plan.wrong)
        history = _history(replay, k, tools)
        # The corrupted turn gets the thought of the call it makes: the gold step's thought
        # would name the right tool (and its purpose) in every CoT prompt.
        history.append((plan.wrong, _thought(plan.wrong, tools), _short(response.content)))
        truth = [(calls[k].name, calls[k].arguments, _thought(calls[k], tools))]
        extra["response_source"] = response.source
        writer.add(writer.internal, _rid(trace.id, "err", k), trace, history, truth, extra)
        return plan.label
    if plan.kind == "ok":
        history = _history(replay, k + 1, tools)
        if k + 1 < len(calls):
            nxt = calls[k + 1]
            truth = [(nxt.name, nxt.arguments, _thought(nxt, tools))]
        else:
            message = _done_message(replay.responses[k])
            truth = [(FINISH, message, message)]
        writer.add(writer.internal, _rid(trace.id, "ok", k), trace, history, truth, extra)
        return "error_free"
    failed = calls[k]
    response = _run_prefix(trace, replay, k, _fault_plan(calls, k, plan.label, seed)).execute(failed)
    history = _history(replay, k, tools)
    history.append((failed, _thought(failed, tools), _short(response.content)))
    if plan.next_step is not None:
        nxt = calls[plan.next_step]
        second: tuple[str, Any, str] = (nxt.name, nxt.arguments, _thought(nxt, tools))
    else:
        message = finish_message(failed, response)
        second = (FINISH, message, message)
    truth = [(failed.name, failed.arguments, _thought(failed, tools)), second]
    extra["next_step"] = plan.next_step
    writer.add(writer.external, _rid(trace.id, "env", k), trace, history, truth, extra)
    return plan.label


def _evolve(
    entries: Sequence[_Entry],
    seed: int,
    evolutions: Sequence[str],
    model: Any,
    dropped: Counter[str],
    counts: dict[str, Counter[str]],
) -> list[tuple[Trace, _Replay, list[Planned]]]:
    """Every entry's trajectory evolved, its gold re-run and its plans rewritten for the new tools."""
    hardener = Hardener(seed)
    toolbox = Toolbox([e.trace for e in entries]) if {"extra_tools", "mixed"} & set(evolutions) else None
    others = [(e.trace, e.replay.calls, e.replay.responses) for e in entries]
    rewrites = rewrite_queries([(e.trace, e.replay.calls) for e in entries], model) if model else {}
    out: list[tuple[Trace, _Replay, list[Planned]]] = []
    for position, entry in enumerate(entries):
        plan = evolutions[position % len(evolutions)]
        rng = random.Random(f"toolmend.critic.evolve:{seed}:{entry.trace.id}")
        evolved = evolve_trace(
            entry.trace, entry.replay.calls, plan, rng, hardener=hardener, toolbox=toolbox,
            others=others, rewrite=rewrites.get(entry.trace.id),
        )  # fmt: skip
        counts["evolution"][plan] += 1
        if "noisy_query" in evolved.strategies:
            counts["query"][evolved.query_source] += 1
            if evolved.fallback:
                counts["fallback"][evolved.fallback] += 1
        trace = evolved.trace
        # Label drift, task level: the request must still state what the gold calls need.
        if not query_keeps_gold(entry.trace.query, trace.query, entry.replay.calls):
            dropped["query_drops_gold"] += len(entry.plans)
            continue
        calls = [evolved.call(c) for c in entry.replay.calls]
        env = trace.make_env()
        responses = [env.execute(c) for c in calls]
        if not all(r.ok for r in responses):
            dropped["gold_fails"] += len(entry.plans)
            continue
        plans = [
            replace(
                p,
                wrong=evolved.call(p.wrong) if p.wrong else None,
                extra={**p.extra, "evolution": trace.evolution},
            )
            for p in entry.plans
        ]
        out.append((trace, _Replay(calls, responses, entry.replay.deps), plans))
    return out


def build_suite(
    source: Source | str = "world",
    *,
    seed: int = 0,
    out: str | Path,
    limit: int | None = None,
    data: str | Path | None = None,
    error_free_every: int = 3,
    external_every: int = 2,
    system_template: str = SYSTEM_TEMPLATE,
    variant: str = "base",
    model: Any = None,
    evolutions: Sequence[str] | None = None,
    tools: str = "all",
    distractors: int = 3,
) -> SuiteInfo:
    """Write a critique suite under ``out`` and return what it holds.

    ``source``: ``world`` (the built-in world's tasks for ``seed``), ``nestools`` or ``bfcl`` (read
    from ``data``, default the shared data folder). ``limit`` caps the number of trajectories (taken
    after a seeded shuffle). ``error_free_every`` / ``external_every``: one error-free sample every
    that many trajectories, and as many external samples as every that many trajectories would
    give (0 turns them off). ``system_template`` replaces the system prompt's wording (it must
    contain ``{tools}``). ``tools="domain"`` offers each world trajectory only its domains' tools
    and ``distractors`` others, instead of all the world's tools (see :func:`.load_traces`).

    ``variant="evolved"`` applies CriticTool's SRM evolution (:mod:`.evolve`) to every trajectory,
    the strategies of ``evolutions`` in turn (default: the four and ``mixed``), and writes the
    official ``evol_data_*`` files; ``model`` (a model name or :class:`~toolmend.models.Model`)
    then rewrites the requests of ``noisy_query``, falling back to the rule when a rewrite fails
    its checks. Every sample of either variant passes the label checks of :mod:`.verify` or is
    dropped and counted in :attr:`SuiteInfo.dropped`.
    """
    if variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; expected {' or '.join(VARIANTS)}")
    if model is not None and variant != "evolved":
        raise ConfigError("a model rewrites requests of the evolved variant only; pass variant='evolved'")
    plans_in_turn = tuple(evolutions) if evolutions else PLANS
    unknown = [p for p in plans_in_turn if p not in PLANS]
    if unknown:
        raise ConfigError(f"unknown evolution {unknown[0]!r}; expected one of {', '.join(PLANS)}")
    inject_context = InjectContext
    root = Path(out)
    traces = load_traces(source, seed=seed, data=data, tools=tools, distractors=distractors)
    random.Random(f"toolmend.critic:{source}:{seed}").shuffle(traces)
    if limit is not None:
        traces = traces[:limit]
    skipped: Counter[str] = Counter()
    entries: list[_Entry] = []
    for index, trace in enumerate(traces):
        replay = _replay(trace, {t.name: t for t in trace.tools})
        if not replay.calls:
            skipped["gold_failed"] += 1
            continue
        entries.append(_Entry(index, trace, replay, []))
        _plan_internal(entries[-1], seed, error_free_every, inject, inject_context, skipped)
    _plan_external(entries, str(source), seed, external_every)

    dropped: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = {"evolution": Counter(), "query": Counter(), "fallback": Counter()}
    if variant == "evolved":
        work = _evolve(entries, seed, plans_in_turn, model, dropped, counts)
    else:
        work = [(e.trace, e.replay, e.plans) for e in entries]

    writer = _Writer(system_template)
    internal: Counter[str] = Counter()
    external: Counter[str] = Counter()
    finish_golds = 0
    # One compiled checker per tool list (the world's traces offer the same tool objects): keyed
    # by the tools' identities, which hold while ``work`` keeps every trace alive.
    checkers: dict[tuple[int, ...], Checker] = {}
    for trace, replay, plans in work:
        ident = tuple(map(id, trace.tools))
        checker = checkers.get(ident)
        if checker is None:
            checker = checkers[ident] = Checker.cached(trace.tools)
        common = {"source": trace.source, "trace": trace.id, "domain": domain(replay.calls[0].name)}
        if variant == "evolved":
            common["variant"] = "evolved"
        make = trace.make_env
        for plan in plans:
            faulty = None
            if plan.kind == "env":
                fault = _fault_plan(replay.calls, plan.k, plan.label, seed)
                faulty = partial(trace.make_env, fault)
            failed = check_sample(plan, replay.calls, trace.tools, make, faulty=faulty, checker=checker)
            if failed is not None:
                dropped[failed] += 1
                continue
            if plan.kind == "error":
                common_extra = {**common, "domain": domain(replay.calls[plan.k].name)}
            else:
                common_extra = common
            key = _write_plan(writer, trace, replay, plan, seed, common_extra)
            if plan.kind == "env":
                external[key] += 1
                finish_golds += plan.next_step is None
            else:
                internal[key] += 1

    files: list[Path] = []
    prefix = "evol" if variant == "evolved" else "base"
    for part, records in (("internal", writer.internal), ("external", writer.external)):
        for key, cot in (("wo", False), ("w", True)):
            path = data_file(root, part, prefix, cot)  # type: ignore[arg-type]
            path.parent.mkdir(parents=True, exist_ok=True)
            text = dumps(records[key], sort_keys=True, indent=1)
            path.write_text(text + "\n", encoding="utf-8")
            files.append(path)
    n_external = sum(external.values())
    info = SuiteInfo(
        source=str(source),
        seed=seed,
        variant=variant,
        tools=tools,
        root=root,
        traces=len(traces),
        internal=dict(sorted(internal.items())),
        external=dict(sorted(external.items())),
        skipped=dict(sorted(skipped.items())),
        planned=sum(len(e.plans) for e in entries),
        dropped={c: dropped[c] for c in CHECKS if dropped[c]},
        finish_share=round(finish_golds / n_external, 4) if n_external else 0.0,
        evolution=dict(sorted(counts["evolution"].items())),
        query_sources=dict(sorted(counts["query"].items())),
        fallbacks=dict(sorted(counts["fallback"].items())),
        files=files,
    )
    # What was built and dropped, for the quality report (not one of the suite's data files).
    (root / f"suite_{variant}.json").write_text(info.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return info
