"""Gold calls from the real BFCL and NesTools data, and error injectors over them.

BFCL gold: the first acceptable value of each parameter of ``possible_answer``, with these rules
(each one is BFCL's own reading of its answer files, see shared/notes/bfcl_and_peers.md §1.3):

- a parameter whose acceptable list contains ``""`` may be omitted, so it is left out — unless the
  schema marks it required, in which case BFCL's checker demands it and the first non-empty value
  is taken;
- nested objects and lists of objects hold acceptable lists again; they are unwrapped the same way;
- an empty acceptable list for an array parameter (live_simple "record" intents) is the empty array;
- a string where the schema wants another type is what BFCL calls a *variable* (its checker
  accepts it by the answer's own type): it becomes a :class:`toolmend.Ref`.

One record is left out because its answer contradicts its own schema and BFCL's checker rejects
it too: parallel_multiple_94 passes fruit names to ``sort_list(elements: array of integer)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolmend._schema import Ref, Tool, ToolCall
from toolmend.formats._tools import load_tools

BFCL_EXCLUDED = {"parallel_multiple_94": "answer gives strings for an array of integer"}


@dataclass
class GoldCase:
    id: str
    tools: list[Tool]
    calls: list[ToolCall]


def _unwrap(values: list[Any], schema: dict[str, Any], required: bool) -> tuple[bool, Any]:
    """(present, value) of one answer parameter."""
    if not values:
        return (schema.get("type") == "array"), []
    if "" in values:
        rest = [v for v in values if v != ""]
        if not required or not rest:
            return False, None
        values = rest
    return True, _literal(values[0], schema)


def _literal(value: Any, schema: dict[str, Any]) -> Any:
    props = schema.get("properties")
    if (
        isinstance(value, dict)
        and isinstance(props, dict)
        and all(isinstance(v, list) for v in value.values())
    ):
        req = set(schema.get("required") or [])
        out = {}
        for k, vs in value.items():
            present, v = _unwrap(vs, props.get(k, {}), k in req)
            if present:
                out[k] = v
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_literal(v, schema["items"]) for v in value]
    if isinstance(value, str) and schema.get("type") not in (None, "string"):
        return Ref(target=value)
    return value


def bfcl_gold(data_dir: Path) -> list[GoldCase]:
    cases: list[GoldCase] = []
    folder = data_dir / "bfcl"
    for qfile in sorted(folder.glob("BFCL_v4_*.json")):
        afile = folder / "possible_answer" / qfile.name
        if not afile.exists():
            continue  # irrelevance: no answers by design
        questions = [json.loads(line) for line in qfile.read_text().splitlines() if line.strip()]
        answers = [json.loads(line) for line in afile.read_text().splitlines() if line.strip()]
        for q, a in zip(questions, answers, strict=True):
            assert q["id"] == a["id"]
            if q["id"] in BFCL_EXCLUDED:
                continue
            tools = load_tools(q["function"])
            by_name = {t.name: t for t in tools}
            calls = []
            for entry in a["ground_truth"]:
                ((name, params),) = entry.items()
                tool = by_name[name]
                args = {}
                for k, vs in params.items():
                    present, v = _unwrap(vs, tool.properties.get(k, {}), k in tool.required)
                    if present:
                        args[k] = v
                calls.append(ToolCall(name=name, arguments=args))
            cases.append(GoldCase(q["id"], tools, calls))
    return cases


def _refs(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("API_call_"):
        return Ref(target=value)
    if isinstance(value, list):
        return [_refs(v) for v in value]
    if isinstance(value, dict):
        return {k: _refs(v) for k, v in value.items()}
    return value


def nestools_gold(data_dir: Path) -> list[GoldCase]:
    cases = []
    path = data_dir / "nestools" / "test_data.jsonl"
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        tools = load_tools(rec["api"])
        calls = [
            ToolCall(name=c["api_name"], arguments=_refs(c["parameters"]), outputs=c.get("responses") or [])
            for c in rec["call"]
        ]
        cases.append(GoldCase(str(rec["test_id"]), tools, calls))
    return cases


@pytest.fixture(scope="session")
def bfcl_cases(data_dir: Path) -> list[GoldCase]:
    return bfcl_gold(data_dir)


@pytest.fixture(scope="session")
def nestools_cases(data_dir: Path) -> list[GoldCase]:
    return nestools_gold(data_dir)


# --- error injectors -------------------------------------------------------------------------
# Each takes a gold case and the index of one gold call and returns (calls, expected_count) with
# exactly that error put in, or None where the error does not apply to that call. They are
# deliberately plain and deterministic (the seed is the case id and call index); the richer
# operators for training data live in toolmend.synth.

Injected = tuple[list[ToolCall], int]

_EXTRA_KEYS = ("verbose", "timeout_ms", "debug_mode", "callback_url", "request_id")


def _copy(case: GoldCase) -> list[ToolCall]:
    return [c.model_copy(deep=True) for c in case.calls]


def _seed(case: GoldCase, i: int) -> int:
    return sum(map(ord, case.id)) + 31 * i


def _tool(case: GoldCase, call: ToolCall) -> Tool:
    return next(t for t in case.tools if t.name == call.name)


def _literal_params(case: GoldCase, call: ToolCall) -> list[str]:
    tool = _tool(case, call)
    return [
        k for k, v in call.arguments.items() if not _has_ref(v) and tool.properties.get(k, {}).get("type")
    ]


def _has_ref(value: Any) -> bool:
    if isinstance(value, Ref):
        return True
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    if isinstance(value, dict):
        return any(_has_ref(v) for v in value.values())
    return False


def _misspell(name: str, seed: int) -> str:
    kind = seed % 4
    if kind == 0 and "." in name:
        return name.replace(".", "_")  # what FC-mode renaming does to BFCL's dotted names
    if kind == 1 and len(name) > 3:
        j = 1 + seed % (len(name) - 2)
        return name[:j] + name[j + 1 :]  # a dropped character
    if kind == 2 and len(name) > 3:
        j = 1 + seed % (len(name) - 3)
        return name[:j] + name[j + 1] + name[j] + name[j + 2 :]  # swapped neighbours
    return name + "_v2"


def inject_wrong_tool_name(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    names = {t.name for t in case.tools}
    for attempt in range(4):
        bad = _misspell(calls[i].name, _seed(case, i) + attempt)
        if bad not in names and bad != calls[i].name:
            calls[i].name = bad
            return calls, len(calls)
    return None


def inject_missing_required(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    present = [k for k in _tool(case, calls[i]).required if k in calls[i].arguments]
    if not present:
        return None
    del calls[i].arguments[present[_seed(case, i) % len(present)]]
    return calls, len(calls)


def _mistype(value: Any, seed: int) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value[0] if len(value) == 1 and not isinstance(value[0], list | dict) else json.dumps(value)
    if isinstance(value, dict):
        return json.dumps(value)
    return None


def inject_invalid_type(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    call = calls[i]
    tool = _tool(case, call)
    options = [
        k
        for k in _literal_params(case, call)
        if tool.properties[k].get("type") != "array" or call.arguments[k]
    ]
    if not options:
        return None
    key = options[_seed(case, i) % len(options)]
    call.arguments[key] = _mistype(call.arguments[key], _seed(case, i))
    return calls, len(calls)


def inject_empty_value(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    call = calls[i]
    tool = _tool(case, call)
    options = [k for k in _literal_params(case, call) if tool.properties[k].get("type") == "string"]
    if not options:
        return None
    call.arguments[options[_seed(case, i) % len(options)]] = ""
    return calls, len(calls)


def inject_redundant_parameter(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    call = calls[i]
    props = _tool(case, call).properties
    seed = _seed(case, i)
    keys = [k for k in call.arguments if len(k) > 2]
    if seed % 2 and keys:
        # A near-miss key: the same name in another case convention.
        key = keys[seed % len(keys)]
        variant = key.upper() if key.lower() == key else key.lower()
        if variant not in props:
            call.arguments = {(variant if k == key else k): v for k, v in call.arguments.items()}
            return calls, len(calls)
    extra = next(k for k in _EXTRA_KEYS if k not in props)
    call.arguments[extra] = True
    return calls, len(calls)


def inject_invalid_value(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    call = calls[i]
    tool = _tool(case, call)
    seed = _seed(case, i)
    for key in _literal_params(case, call):
        schema = tool.properties[key]
        value = call.arguments[key]
        enum = schema.get("enum")
        if isinstance(enum, list) and isinstance(value, str):
            variant = value.upper() if value.upper() != value else value.lower()
            call.arguments[key] = variant if seed % 2 and variant not in enum else "not_an_option"
            return calls, len(calls)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(schema.get("minimum"), int | float):
                call.arguments[key] = schema["minimum"] - 1
                return calls, len(calls)
            if isinstance(schema.get("maximum"), int | float):
                call.arguments[key] = schema["maximum"] + 1
                return calls, len(calls)
    return None


def inject_wrong_tool_count(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    del calls[i]
    return calls, len(case.calls)


def inject_duplicate_call(case: GoldCase, i: int) -> Injected | None:
    calls = _copy(case)
    calls.insert(i + 1, calls[i].model_copy(deep=True))
    return calls, len(case.calls)


INJECTORS = {
    "wrong_tool_name": inject_wrong_tool_name,
    "missing_required": inject_missing_required,
    "invalid_type": inject_invalid_type,
    "empty_value": inject_empty_value,
    "redundant_parameter": inject_redundant_parameter,
    "invalid_value": inject_invalid_value,
    "wrong_tool_count": inject_wrong_tool_count,
    "duplicate_call": inject_duplicate_call,
}


@pytest.fixture(scope="session")
def injectors() -> dict[str, Any]:
    return INJECTORS
