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
- every ``external_every``-th trajectory, one **external** sample: step *k* is right but the
  environment fails it (timeout, rate limit, permission denied, service unavailable, connection
  reset, in turn); the gold answer is ``[the failed call, the next step that does not need its
  output]``, or ``FinishAction`` when every later step needs it.

Files follow the official layout, ``{internal_error,external_error}/base_data_{wo,w}_cot.json``,
one JSON object id → record with sorted keys, so :func:`toolmend.benchmarks.critictool.load_critictool`
reads them unchanged. The same ``seed`` always writes the same bytes. Records carry a ``toolmend``
field (operator, sub-label, step, fault) for analysis; the official code ignores it, and the
checklist critic never sees it.

>>> info = build_suite("world", seed=0, out=tmp_path, limit=12)
>>> sum(info.internal.values()) > 0 and sum(info.external.values()) > 0
True
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolmend.benchmarks.critic.record import SYSTEM_TEMPLATE, action_args, action_text, system_prompt
from toolmend.benchmarks.critic.traces import Source, Trace, load_traces
from toolmend.benchmarks.critictool.records import FINISH, data_file
from toolmend.env import FAULT_KINDS, Environment, FaultPlan, FaultRule, ToolResponse, extract_path
from toolmend.schema import Ref, Tool, ToolCall
from toolmend.synth.inject import InjectContext, inject

__all__ = ["INTERNAL_OPERATORS", "SuiteInfo", "build_suite", "finish_message"]

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
    root: Path
    traces: int
    """Trajectories used (after ``limit``)."""
    internal: dict[str, int] = Field(default_factory=dict)
    """Internal samples per error type; ``error_free`` counts the error-free ones."""
    external: dict[str, int] = Field(default_factory=dict)
    """External samples per fault kind."""
    skipped: dict[str, int] = Field(default_factory=dict)
    """Why some planned samples were not written (e.g. ``gold_failed``, ``no_operator``)."""
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


def _resolve(value: Any, bindings: dict[str, Any]) -> Any:
    if isinstance(value, Ref):
        head, _, path = value.target.partition(".")
        bound = bindings[value.target] if value.target in bindings else bindings[head]
        return extract_path(bound, path) if path and value.target not in bindings else bound
    if isinstance(value, dict):
        return {k: _resolve(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, bindings) for v in value]
    return value


def _refs(value: Any) -> set[str]:
    if isinstance(value, Ref):
        return {value.target.split(".", 1)[0]}
    if isinstance(value, dict):
        return {r for v in value.values() for r in _refs(v)}
    if isinstance(value, list):
        return {r for v in value for r in _refs(v)}
    return set()


def _dependencies(calls: Sequence[ToolCall]) -> list[set[int]]:
    """For each call, every earlier call it needs, directly or through another call."""
    producer: dict[str, int] = {}
    deps: list[set[int]] = []
    for i, call in enumerate(calls):
        direct = {producer[r] for r in _refs(call.arguments) if r in producer}
        deps.append(direct.union(*(deps[d] for d in direct)) if direct else set())
        producer.update({o: i for o in call.outputs})
    return deps


def _replay(trace: Trace, tools: dict[str, Tool]) -> _Replay:
    """Run the gold calls; stop before the first one that fails (bad gold data)."""
    env = trace.make_env()
    calls: list[ToolCall] = []
    responses: list[ToolResponse] = []
    for call in trace.calls:
        try:
            args = _resolve(call.arguments, env.bindings)
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
    return _Replay(calls, responses, _dependencies(trace.calls[: len(calls)]))


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
) -> SuiteInfo:
    """Write a critique suite under ``out`` and return what it holds.

    ``source``: ``world`` (the built-in world's tasks for ``seed``), ``nestools`` or ``bfcl`` (read
    from ``data``, default the shared data folder). ``limit`` caps the number of trajectories (taken
    after a seeded shuffle). ``error_free_every`` / ``external_every``: one error-free / external
    sample every that many trajectories (0 turns them off). ``system_template`` replaces the system
    prompt's wording (it must contain ``{tools}``).
    """
    inject_context = InjectContext
    root = Path(out)
    traces = load_traces(source, seed=seed, data=data)
    random.Random(f"toolmend.critic:{source}:{seed}").shuffle(traces)
    if limit is not None:
        traces = traces[:limit]
    writer = _Writer(system_template)
    internal: Counter[str] = Counter()
    external: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    n_external = 0
    for index, trace in enumerate(traces):
        tools = {t.name: t for t in trace.tools}
        replay = _replay(trace, tools)
        n = len(replay.calls)
        if n == 0:
            skipped["gold_failed"] += 1
            continue
        rng = random.Random(f"toolmend.critic:{seed}:{trace.id}")
        sample_seed = rng.randrange(2**31)

        # Error-injected internal sample: operators in turn, the next one when one does not apply.
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
            k = injection.step
            wrong = injection.corrupted[0].model_copy(update={"outputs": [], "output_fields": [], "id": None})
            response = _run_prefix(trace, replay, k).execute(wrong)
            gold = replay.calls[k]
            history = _history(replay, k, tools)
            history.append((wrong, _thought(gold, tools), _short(response.content)))
            extra = {
                "error_type": injection.label,
                "operator": injection.operator,
                "sub_label": injection.sub_label,
                "detectable": injection.detectable,
                "expected_codes": list(injection.expected_codes),
                "step": k,
                "source": trace.source,
                "trace": trace.id,
                "response_source": response.source,
            }
            truth: list[tuple[str, Any, str]] = [(gold.name, gold.arguments, _thought(gold, tools))]
            writer.add(writer.internal, _rid(trace.id, "err", k), trace, history, truth, extra)
            internal[injection.label] += 1

        # Error-free internal sample.
        if error_free_every and index % error_free_every == 0:
            k = rng.randrange(n)
            history = _history(replay, k + 1, tools)
            if k + 1 < n:
                nxt = replay.calls[k + 1]
                truth = [(nxt.name, nxt.arguments, _thought(nxt, tools))]
            else:
                message = _done_message(replay.responses[k])
                truth = [(FINISH, message, message)]
            extra = {"error_type": "", "step": k, "source": trace.source, "trace": trace.id}
            writer.add(writer.internal, _rid(trace.id, "ok", k), trace, history, truth, extra)
            internal["error_free"] += 1

        # External sample: a fault at step k.
        if external_every and index % external_every == 0:
            # Prefer a step that leaves an independent subtask to skip to, when the trajectory has one.
            skippable = [s for s in range(n) if any(s not in replay.deps[j] for j in range(s + 1, n))]
            k = rng.choice(skippable) if skippable else rng.randrange(n)
            kind = FAULT_KINDS[n_external % len(FAULT_KINDS)]
            n_external += 1
            failed = replay.calls[k]
            number = sum(1 for c in replay.calls[: k + 1] if c.name == failed.name)
            plan = FaultPlan(seed=seed, rules=[FaultRule(kind=kind, tool=failed.name, calls=[number])])
            response = _run_prefix(trace, replay, k, plan).execute(failed)
            if response.source != "fault":
                skipped["fault_not_raised"] += 1
                continue
            history = _history(replay, k, tools)
            history.append((failed, _thought(failed, tools), _short(response.content)))
            later = [j for j in range(k + 1, n) if k not in replay.deps[j]]
            if later:
                nxt = replay.calls[later[0]]
                second: tuple[str, Any, str] = (nxt.name, nxt.arguments, _thought(nxt, tools))
            else:
                message = finish_message(failed, response)
                second = (FINISH, message, message)
            truth = [(failed.name, failed.arguments, _thought(failed, tools)), second]
            extra = {
                "fault": kind,
                "step": k,
                "next_step": later[0] if later else None,
                "source": trace.source,
                "trace": trace.id,
            }
            writer.add(writer.external, _rid(trace.id, "env", k), trace, history, truth, extra)
            external[kind] += 1

    files: list[Path] = []
    for part, records in (("internal", writer.internal), ("external", writer.external)):
        for key, cot in (("wo", False), ("w", True)):
            path = data_file(root, part, "base", cot)  # type: ignore[arg-type]
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(records[key], ensure_ascii=False, sort_keys=True, indent=1)
            path.write_text(text + "\n", encoding="utf-8")
            files.append(path)
    return SuiteInfo(
        source=str(source),
        seed=seed,
        root=root,
        traces=len(traces),
        internal=dict(sorted(internal.items())),
        external=dict(sorted(external.items())),
        skipped=dict(sorted(skipped.items())),
        files=files,
    )
