"""ToolAlpaca evaluation sets → Samples with gold call sequences (``toolalpaca``).

``eval_real.json`` (11 real APIs, 114 instructions — HiTEC's "Tool-Alpaca") and
``eval_simulated.json`` (10 simulated APIs, 100 instructions) are JSON arrays of tools, each with
``Function_Description`` (function name → text with a ``Parameters: {json}`` line),
``Instructions`` and parallel ``Golden_Answers`` (lists of ``{"Action", "Action_Input"}`` steps).

Upstream judges trajectories with GPT-4; we compare the gold call list with HiTEC's F1s. The gold
data needs some care, all recorded in ``metadata``:

- ``Action_Input`` is a JSON string, but some are not valid JSON: ``${x from getDetails}``
  placeholders (read back as the string ``"${x from getDetails}"``) and a doubled key
  (``"symbols": "symbols": [...]``) are repaired; an input still unreadable is kept as
  ``{}`` with the raw text under ``metadata["raw_inputs"]``;
- an ``[Optional]`` action prefix is dropped and the step listed in ``metadata["optional_steps"]``;
- actions that are not functions of the tool (``getDetails``, i.e. asking the user; endpoints
  missing from the description) stay in the gold and are listed in ``metadata["unknown_actions"]``.

>>> samples = ToolAlpaca().load(split="real")
>>> len(samples)
114
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from toolmend._errors import ConfigError, DatasetError
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._base import BENCHMARKS
from toolmend.benchmarks._hitec import CallListBenchmark
from toolmend.benchmarks._io import JsonDoc, UniqueIds, read_json_doc

__all__ = ["ToolAlpaca", "load_toolalpaca", "parse_action_input", "tools_from_descriptions"]

Split = Literal["all", "real", "simulated"]
_FILES = {"real": "eval_real.json", "simulated": "eval_simulated.json"}
_PARAMS_LINE = re.compile(r"Parameters:\s*(\{.*?\})\s*\n\s*Output:", re.DOTALL)
_PLACEHOLDER = re.compile(r'(?<!")\$\{([^}]*)\}"?')
_DOUBLED_KEY = re.compile(r'"([^"]+)":\s*"\1":')
_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "object": "object",
}


def parse_action_input(raw: Any) -> dict[str, Any] | None:
    """A gold ``Action_Input`` string → arguments, repairing the set's known slips; None if hopeless.

    >>> parse_action_input('{"id": ${id from search}}')
    {'id': '${id from search}'}
    """
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    text = raw.strip() or "{}"
    for attempt in (
        text,
        _PLACEHOLDER.sub(lambda m: json.dumps("${" + m.group(1) + "}"), text),
        _DOUBLED_KEY.sub(r'"\1":', text),
    ):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _param_schema(text: Any) -> tuple[dict[str, Any], bool]:
    # "Required. string. The country code." → ({"type": "string", "description": ...}, True)
    if not isinstance(text, str):
        return {"description": str(text)}, False
    parts = [p.strip() for p in text.split(". ", 2)]
    required = bool(parts) and parts[0].lower().startswith("required")
    if parts and parts[0].lower().rstrip(".") in ("required", "optional"):
        parts = parts[1:]
    schema: dict[str, Any] = {}
    if parts:
        kind = parts[0].rstrip(".")
        base = kind.split("[", 1)[0].split("{", 1)[0].lower()
        if base == "array":
            schema["type"] = "array"
        elif base in _TYPES:
            schema["type"] = _TYPES[base]
        if "type" in schema or base in ("array", "object"):
            schema["x-original-type"] = kind
            parts = parts[1:]
    if parts:
        schema["description"] = ". ".join(parts)
    return schema, required


def tools_from_descriptions(descriptions: dict[str, Any]) -> list[Tool]:
    """``Function_Description`` → tools (the ``components`` entry, output formats, is skipped)."""
    tools: list[Tool] = []
    for name, text in descriptions.items():
        if name == "components" or not isinstance(text, str):
            continue
        m = _PARAMS_LINE.search(text)
        props: dict[str, Any] = {}
        required: list[str] = []
        if m:
            try:
                declared = json.loads(m.group(1))
            except ValueError:
                declared = {}
            for pname, ptext in declared.items() if isinstance(declared, dict) else []:
                props[pname], is_required = _param_schema(ptext)
                if is_required:
                    required.append(pname)
        description = text[: m.start()].strip() if m else text.strip()
        tools.append(
            Tool(
                name=name,
                description=description,
                parameters={"type": "object", "properties": props, "required": required},
                metadata={"dialect": "toolalpaca"},
            )
        )
    return tools


def _load_file(path: Path) -> list[Sample]:
    doc = read_json_doc(path)
    if not isinstance(doc.value, list):
        raise DatasetError("expected a JSON array of tools", path=path)
    samples: list[Sample] = []
    unique = UniqueIds(path)
    for t, api in enumerate(doc.value):
        _check_api(doc, t, api)
        unique.add(api.get("Name", t), doc.line(t) or 0, field=f"[{t}].Name")
        instructions, answers = api["Instructions"], api["Golden_Answers"]
        tools = tools_from_descriptions(api["Function_Description"])
        names = {tool.name for tool in tools}
        for i, (instruction, steps) in enumerate(zip(instructions, answers, strict=True)):
            target: list[ToolCall] = []
            meta: dict[str, Any] = {"api": api.get("Name"), "source": path.name}
            for s, step in enumerate(steps):
                action = step["Action"]
                if action.startswith("[Optional]"):
                    action = action.removeprefix("[Optional]").strip()
                    meta.setdefault("optional_steps", []).append(s)
                if action not in names:
                    meta.setdefault("unknown_actions", []).append(action)
                args = parse_action_input(step.get("Action_Input", "{}"))
                if args is None:
                    meta.setdefault("raw_inputs", {})[s] = step.get("Action_Input")
                    args = {}
                target.append(ToolCall(name=action, arguments=args))
            samples.append(
                Sample(
                    id=f"{path.stem}:{api.get('Name', t)}#{i}",
                    messages=[Message(role="user", content=instruction)],
                    tools=tools,
                    target=target,
                    metadata=meta,
                )
            )
    return samples


def _check_api(doc: JsonDoc, t: int, api: Any) -> None:
    """The field types of tool ``t``; a wrong one is a DatasetError naming its line and field."""
    if not isinstance(api, dict):
        raise doc.error(t, "expected a tool object")
    if "Name" in api and not isinstance(api["Name"], str):
        raise doc.error(t, "expected the tool name as a string", "Name")
    functions = api.get("Function_Description")
    if not isinstance(functions, dict):
        raise doc.error(t, "expected an object of function name -> description", "Function_Description")
    for name, text in functions.items():
        if not isinstance(text, str):
            raise doc.error(t, "expected the description as a string", f"Function_Description.{name}")
    instructions, answers = api.get("Instructions"), api.get("Golden_Answers")
    if not isinstance(instructions, list):
        raise doc.error(t, "expected a list of instructions", "Instructions")
    if not isinstance(answers, list):
        raise doc.error(t, "expected a list of golden answers", "Golden_Answers")
    if len(instructions) != len(answers):
        raise doc.error(
            t, f"{len(answers)} golden answers for {len(instructions)} instructions", "Golden_Answers"
        )
    for i, (instruction, steps) in enumerate(zip(instructions, answers, strict=True)):
        if not isinstance(instruction, str):
            raise doc.error(t, "expected the instruction as a string", f"Instructions[{i}]")
        if not isinstance(steps, list):
            raise doc.error(t, "expected a list of steps", f"Golden_Answers[{i}]")
        for s, step in enumerate(steps):
            where = f"Golden_Answers[{i}][{s}]"
            if not isinstance(step, dict) or not isinstance(step.get("Action"), str):
                raise doc.error(t, "expected {'Action': str, 'Action_Input': str}", where)
            if not isinstance(step.get("Action_Input", ""), str | dict):
                raise doc.error(t, "expected the action input as a JSON string", f"{where}.Action_Input")


def load_toolalpaca(folder: str | Path, split: Split = "real") -> list[Sample]:
    """Read ``eval_real.json`` / ``eval_simulated.json`` from ``folder`` (or one of them directly)."""
    root = Path(folder)
    if root.is_file():
        return _load_file(root)
    if split not in ("all", *_FILES):
        raise ConfigError(f"unknown ToolAlpaca split {split!r} (all, real, simulated)")
    names = list(_FILES) if split == "all" else [split]
    return [s for name in names for s in _load_file(root / _FILES[name])]


@BENCHMARKS.register("toolalpaca")
class ToolAlpaca(CallListBenchmark):
    """ToolAlpaca, scored with HiTEC's F1s plus ToolACE-R accuracy/overlap (``split``: real by default)."""

    gold_ceiling = "Hammer's F1 rule for a tool called more than once lowers even the gold reply"
    load_options = ("split",)
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "toolalpaca"
    default_data = "data/toolalpaca"

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Option ``split``: real (HiTEC's 114 queries, default), simulated or all."""
        self.check_load_options(options)
        return load_toolalpaca(self._data_path(path), options.get("split", "real"))
