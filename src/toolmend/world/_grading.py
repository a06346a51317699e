"""Grading an episode in the world by what it did to the state, never by an LLM judge.

The gold trajectory of a task is executed once in a fresh world; the leaves of the state that it
changes are the fields the task touches. An episode is then graded on:

- **state**: every touched field holds the gold value in the episode's final state;
- **facts**: the final answer contains every fact the task asks for (values read by the gold
  trajectory's last reads, compared as normalised numbers or strings), each also found in a
  successful tool result of the episode (no credit for a value it never obtained);
- **success**: state and facts both hold;
- **progress**: the fraction of touched fields that hold their gold value (write tasks only);
- **harm**: fields the episode changed that the gold trajectory leaves alone;
- **all-or-nothing** (BFCL's multi-turn checker): the whole final state equals the gold state and
  every gold call's result is among the episode's successful results.

>>> from toolmend.world import World, generate_tasks
>>> task = next(t for t in generate_tasks(0) if t.template == "todo_add")
>>> gold = gold_run(task)
>>> sorted({p.split("/")[0] for p in gold.changes})
['todos']
>>> world = World.create(task.seed)
>>> _ = world.environment().run(task.calls)
>>> grade(gold, world.snapshot(), gold.answer, [r for r in gold.results]).success
True
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from toolmend._errors import DatasetError
from toolmend._schema import ToolCall, extract_path, refs, resolve
from toolmend.env._environment import Environment
from toolmend.world._tasks import Task
from toolmend.world._world import World
from toolmend.world.domains import WORLD_TOOLS

__all__ = [
    "FACT_FIELDS",
    "GoldRun",
    "Grade",
    "answer_has",
    "diff_state",
    "flatten_state",
    "gold_run",
    "grade",
    "state_changes",
]

# Bookkeeping that every write moves; never a field a task "touches".
_IGNORED = ("version", "counters")
_MISSING = "<absent>"
_UNSET = object()

WRITE_TOOLS: frozenset[str] = frozenset(t.name for t in WORLD_TOOLS.tools if t.metadata.get("side_effects"))

FACT_FIELDS: dict[str, tuple[str, ...]] = {
    "weather_current": ("temperature", "condition"),
    "weather_forecast": ("high", "low", "condition"),
    "weather_air_quality": ("aqi",),
    "weather_alerts": ("count",),
    "mail_read": ("subject",),
    "mail_search": ("emails.0.subject",),
    "contacts_search": ("contacts.0.email",),
    "contacts_get": ("email",),
    "contacts_list_by_city": ("contacts.*.name",),
    "calendar_list_events": ("count", "events.*.title"),
    "calendar_find_free_slot": ("start_time",),
    "files_read": ("content",),
    "files_search": ("files.*.path",),
    "files_list": ("files.*.path",),
    "maps_distance": ("distance_km",),
    "maps_search_places": ("places.0.name",),
    "maps_place_details": ("name", "rating"),
    "maps_geocode": ("latitude", "longitude"),
    "maps_timezone": ("timezone",),
    "finance_get_balance": ("balance",),
    "finance_convert_currency": ("converted",),
    "finance_stock_quote": ("price",),
    "finance_list_accounts": ("accounts.*.balance",),
    "finance_transactions": ("transactions.*.amount",),
    "travel_search_flights": ("flights.0.flight_id", "flights.0.price"),
    "travel_get_flight": ("depart_time",),
    "travel_search_hotels": ("hotels.0.name",),
    "shop_search_products": ("products.0.name", "products.0.price"),
    "shop_get_product": ("price",),
    "shop_view_cart": ("total",),
    "shop_order_status": ("status",),
    "todo_list": ("todos.*.title",),
}
"""Per read tool, the fields of its result a user who asked for it expects in the answer
(``*`` takes every list item, capped at five)."""


_ID = re.compile(r"^[A-Z]{1,3}\d{4}$")


def _ids(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, str):
        if _ID.match(value):
            out.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _ids(k, out)
            _ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _ids(v, out)
    return out


def _canonical(snapshot: dict[str, Any], initial: dict[str, Any]) -> dict[str, Any]:
    """``snapshot`` with the records created since ``initial`` keyed by their content.

    Fresh ids come from counters, so two valid orders of the same calls number new records
    differently (book the hotel first and it is ``B0001``). A created record is therefore keyed
    ``+<digest of its content>`` (``#2`` for a second identical one), and every fresh id inside
    any record is written ``<new>``: equal work compares equal whatever the order.
    """
    known = _initial_ids(initial)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return "<new>" if _ID.match(value) and value not in known else value
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    out: dict[str, Any] = {}
    for key, value in snapshot.items():
        before = initial.get(key)
        if value == before:  # most collections are untouched: nothing to rename
            out[key] = value
            continue
        if isinstance(value, dict) and isinstance(before, dict):
            kept = {k: scrub(v) for k, v in value.items() if k in before}
            fresh = [scrub(v) for k, v in value.items() if k not in before]
        elif isinstance(value, list) and isinstance(before, list) and key != "cart":
            kept = {str(i): scrub(v) for i, v in enumerate(value[: len(before)])}
            fresh = [scrub(v) for v in value[len(before) :]]
        else:
            out[key] = scrub(value)
            continue
        seen: dict[str, int] = {}
        for record in fresh:
            digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]
            seen[digest] = seen.get(digest, 0) + 1
            kept[f"+{digest}" + (f"#{seen[digest]}" if seen[digest] > 1 else "")] = record
        out[key] = kept
    return out


def flatten_state(snapshot: dict[str, Any], initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaf path → value over a world snapshot (``"emails/M0003/folder"``), bookkeeping left out.

    With ``initial`` (the snapshot the episode started from), created records are keyed by
    content rather than by their fresh ids (see :func:`_canonical`).
    """
    if initial is not None:
        snapshot = _canonical(snapshot, initial)
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{prefix}/{k}", v)
        elif isinstance(value, list) and value:
            for i, v in enumerate(value):
                walk(f"{prefix}/{i}", v)
        else:
            out[prefix] = value

    for key, value in snapshot.items():
        if key not in _IGNORED:
            walk(key, value)
    return out


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Flattened paths whose value differs, mapped to the value after (``"<absent>"`` if removed)."""
    return {
        p: after.get(p, _MISSING)
        for p in before.keys() | after.keys()
        if before.get(p, _MISSING) != after.get(p, _MISSING)
    }


def diff_state(initial: dict[str, Any], snapshot: dict[str, Any]) -> dict[str, Any]:
    """What changed from ``initial`` to ``snapshot``: flattened paths (created records keyed by
    content) mapped to their new value. Only collections that differ are flattened."""
    canon = _canonical(snapshot, initial)
    changes: dict[str, Any] = {}
    for key in initial.keys() | canon.keys():
        if key in _IGNORED:
            continue
        before, after = initial.get(key, _MISSING), canon.get(key, _MISSING)
        if before != after:
            changes.update(state_changes(flatten_state({key: before}), flatten_state({key: after})))
    return changes


class GoldRun(BaseModel):
    """What the gold trajectory of a task does: literal calls, results, state changes, facts."""

    task_id: str
    seed: int
    calls: list[ToolCall]
    """The gold calls with every reference replaced by its value (what a model must send)."""
    levels: list[int]
    results: list[str]
    """Each gold call's result as the model sees it."""
    changes: dict[str, Any]
    """Touched field → gold value after the trajectory (the whole difference to the initial
    state, so two runs with equal changes end in equal states)."""
    facts: list[Any] = Field(default_factory=list)
    answer: str = ""
    """A final answer that states every fact."""

    @property
    def read_only(self) -> bool:
        """Whether the task changes nothing."""
        return not self.changes


def _pick(data: Any, path: str) -> list[Any]:
    head, _, rest = path.partition(".*.")
    if rest:
        try:
            items = extract_path(data, head)
        except (KeyError, IndexError, TypeError, ValueError):
            return []
        return [v for item in items[:5] for v in _pick(item, rest)] if isinstance(items, list) else []
    try:
        value = extract_path(data, path)
    except (KeyError, IndexError, TypeError, ValueError):
        return []
    return [] if isinstance(value, dict | list) or value is None or isinstance(value, bool) else [value]


def _facts(calls: list[ToolCall], data: list[Any]) -> list[Any]:
    # The last read of each chain answers the user: a read whose outputs no later call uses.
    used = {r.head for call in calls for _, r in refs(call.arguments)}
    facts: list[Any] = []
    for call, value in zip(calls, data, strict=True):
        if call.name in WRITE_TOOLS or any(o in used for o in call.outputs):
            continue
        for path in FACT_FIELDS.get(call.name, ()):
            facts.extend(f for f in _pick(value, path) if f not in facts)
    return facts


def gold_run(task: Task) -> GoldRun:
    """Execute ``task``'s gold trajectory in a fresh world and record what grading needs.

    Raises :class:`~toolmend.DatasetError` when a gold call fails (the task is not passable; see
    the audit).
    """
    world = World.create(task.seed)
    env = Environment(WORLD_TOOLS, checker=None, context={"state": world.state})
    literal: list[ToolCall] = []
    results: list[str] = []
    data: list[Any] = []
    for call in task.calls:
        response = env.execute(call)
        if not response.ok:
            raise DatasetError(f"{task.id}: gold call {call.name} failed: {response.content[:200]}")
        # Its own outputs are bound only now, and its arguments never refer to them.
        args = resolve(call.arguments, env.bindings)
        literal.append(ToolCall(name=call.name, arguments=args))
        results.append(response.content)
        data.append(response.data)
    changes = diff_state(_initial(task.seed), world.snapshot())
    facts = _facts(task.calls, data)
    answer = "Done." if not facts else "Here is what I found: " + "; ".join(_say(f) for f in facts) + "."
    return GoldRun(
        task_id=task.id,
        seed=task.seed,
        calls=literal,
        levels=task.levels,
        results=results,
        changes=changes,
        facts=facts,
        answer=answer,
    )


def _say(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) and "\n" in value else str(value)


# -- answers -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[\"'`*_]", "", text).casefold().split())


def answer_has(answer: str, fact: Any) -> bool:
    """Whether ``answer`` states ``fact``: numbers within rounding (to a whole number or 0.5 %,
    sign ignored, thousands separators allowed), strings case- and whitespace-insensitively, a
    multi-line text line by line.

    >>> answer_has("It is 21 degrees and sunny", 21.3), answer_has("Balance: $8,000.46", 8000.46)
    (True, True)
    >>> answer_has("It is 23 degrees", 21.3)
    False
    """
    if isinstance(fact, bool):
        return True
    if isinstance(fact, int | float):
        target = abs(float(fact))
        tolerance = max(0.5, 0.005 * target)
        for m in _NUMBER.finditer(answer):
            try:
                value = abs(float(m.group(0).replace(",", "")))
            except ValueError:
                continue
            if math.isclose(value, target, abs_tol=tolerance):
                return True
        return False
    text = _norm(answer)
    lines = [_norm(line) for line in str(fact).splitlines() if line.strip()]
    return all(line in text for line in lines) if lines else True


# -- grading -------------------------------------------------------------------------------------


class Grade(BaseModel):
    """The grades of one episode (see the module docstring)."""

    success: bool
    state_ok: bool
    facts_ok: bool
    progress: float | None
    """``None`` for read-only tasks."""
    harm: int
    """How many fields changed that the task did not ask to change."""
    all_or_nothing: bool
    facts_found: int = 0
    facts_total: int = 0
    missed_changes: list[str] = Field(default_factory=list)
    harmful_changes: list[str] = Field(default_factory=list)


def grade(gold: GoldRun, final_snapshot: dict[str, Any], answer: str, results: list[str]) -> Grade:
    """Grade an episode that ended in ``final_snapshot`` with ``answer``; ``results`` are the
    contents of the episode's successful tool calls (the evidence for facts, and BFCL's response
    check)."""
    made = diff_state(_initial(gold.seed), final_snapshot)
    missed = sorted(p for p, v in gold.changes.items() if made.get(p, _UNSET) != v)
    harmful = sorted(p for p in made if p not in gold.changes)
    # A fact counts when the answer states it and a successful result of the episode held it: an
    # answer cannot get credit for a value the episode never obtained.
    evidence = "\n".join(results)
    found = sum(answer_has(answer, f) and answer_has(evidence, f) for f in gold.facts)
    state_ok = not missed
    facts_ok = found == len(gold.facts)
    progress = None if gold.read_only else 1 - len(missed) / len(gold.changes)
    seen = set(results)
    all_or_nothing = made == gold.changes and all(r in seen for r in gold.results)
    return Grade(
        success=state_ok and facts_ok,
        state_ok=state_ok,
        facts_ok=facts_ok,
        progress=progress,
        harm=len(harmful),
        all_or_nothing=all_or_nothing,
        facts_found=found,
        facts_total=len(gold.facts),
        missed_changes=missed[:20],
        harmful_changes=harmful[:20],
    )


@lru_cache(maxsize=16)
def _initial(seed: int) -> dict[str, Any]:
    return World.create(seed).snapshot()


@lru_cache(maxsize=16)
def _initial_ids_of(seed: int) -> frozenset[str]:
    return frozenset(_ids(_initial(seed), set()))


def _initial_ids(initial: dict[str, Any]) -> frozenset[str]:
    seed = initial.get("seed")
    if isinstance(seed, int) and initial.get("version") == 0:
        return _initial_ids_of(seed)
    return frozenset(_ids(initial, set()))
