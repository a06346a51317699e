"""CriticTool's data files → :class:`~toolmend.Sample` objects.

The official layout (Hugging Face ``chocckaka/CriticTool-Dataset``)::

    <root>/internal_error/{base,evol}_data_{wo,w}_cot.json
    <root>/external_error/{base,evol}_data_{wo,w}_cot.json

Each file is one JSON object mapping a sample id to ``{"query_prompt": [messages],
"ground_truth": action | [failed_action, next_action], "error_type": ...}``. The tool list is not a
field: it is embedded in the system prompt, and is read back from it the way the official evaluator
does (the span from the first ``[`` up to ``"\\nTo use a tool"``, ``json.loads`` then
``ast.literal_eval``).

External records are scored twice in the paper (skip and finish instructions), so each becomes one
Sample per external mode; the mode is in ``metadata["external_mode"]``.

>>> from toolmend.benchmarks.critic import build_suite
>>> root = build_suite("world", seed=0, out=tmp_path, limit=8).root
>>> samples = load_critictool(root)
>>> samples[0].metadata["part"], sorted({s.metadata["part"] for s in samples})
('internal', ['external', 'internal'])
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from toolmend._errors import DatasetError
from toolmend._schema import Message, Role, Sample, Tool, ToolCall
from toolmend.benchmarks._io import JsonDoc
from toolmend.formats._critictool import CATEGORIES, FINISH, parse_action, parse_tool_list, prompt_tools

__all__ = [
    "CATEGORIES",
    "FINISH",
    "ExternalMode",
    "Part",
    "Variant",
    "data_file",
    "load_critictool",
    "load_critictool_file",
    "parse_tool_list",
    "prompt_tools",
]

Part = Literal["internal", "external"]
Variant = Literal["base", "evol"]
ExternalMode = Literal["skip", "finish"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "function": "tool",
    "tool": "tool",
}


def data_file(root: str | Path, part: Part, variant: Variant | str, cot: bool) -> Path:
    """Path of one official file: ``<root>/<part>_error/<variant>_data_<w|wo>_cot.json``."""
    return Path(root) / f"{part}_error" / f"{variant}_data_{'w' if cot else 'wo'}_cot.json"


class _FileContext:
    """Where a record sits in its file, for error messages that point at the right place."""

    def __init__(self, doc: JsonDoc) -> None:
        self.doc = doc

    def error(self, record_id: str, field: str, message: str) -> DatasetError:
        return self.doc.error(record_id, message, field)


def _call(action: Mapping[str, Any]) -> ToolCall:
    name = str(action.get("name", ""))
    args = action.get("args", {})
    if isinstance(args, str) and name != FINISH:
        # The paper's figures show history args as a stringified Python dict.
        try:
            literal = ast.literal_eval(args)
        except Exception:
            literal = None
        if isinstance(literal, dict):
            args = literal
    if isinstance(args, dict):
        arguments = args
    elif name == FINISH:
        arguments = {"answer": args}
    else:
        arguments = {"value": args}
    return ToolCall(name=name, arguments=arguments)


def _messages(ctx: _FileContext, rid: str, prompt: Any) -> list[Message]:
    if not isinstance(prompt, list) or not prompt:
        raise ctx.error(rid, "query_prompt", "expected a non-empty list of chat messages")
    out: list[Message] = []
    last_call: str | None = None
    for i, msg in enumerate(prompt):
        if not isinstance(msg, Mapping):
            raise ctx.error(rid, f"query_prompt[{i}]", "expected an object with 'role' and 'content'")
        role = _ROLES.get(str(msg.get("role")))
        if role is None:
            raise ctx.error(
                rid,
                f"query_prompt[{i}].role",
                f"expected one of system, user, assistant, function; got {msg.get('role')!r}",
            )
        content = msg.get("content", "")
        if not isinstance(content, str):
            raise ctx.error(rid, f"query_prompt[{i}].content", "expected a string")
        if role == "assistant":
            action = parse_action(content)
            last_call = action.name or None
        out.append(Message(role=role, content=content, name=last_call if role == "tool" else None))
    if out[0].role != "system":
        raise ctx.error(rid, "query_prompt[0].role", "expected the system prompt holding the tool list")
    return out


def _action(ctx: _FileContext, rid: str, field: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str) or "args" not in value:
        raise ctx.error(rid, field, "expected an action object with a string 'name' and 'args'")
    if not isinstance(value["args"], Mapping | str):
        # An object of arguments, or (history calls, FinishAction) the same as a string.
        raise ctx.error(
            rid, f"{field}.args", f"expected an object or a string, got {type(value['args']).__name__}"
        )
    return dict(value)


def _tools(ctx: _FileContext, rid: str, system: str) -> list[Tool]:
    try:
        return prompt_tools(system)
    except DatasetError as exc:
        raise ctx.error(rid, f"query_prompt[0].content tools{exc.field or ''}", exc.reason) from None
    except ValueError as exc:
        raise ctx.error(rid, "query_prompt[0].content", str(exc)) from None


def load_critictool_file(
    path: str | Path,
    *,
    part: Part | None = None,
    cot: bool | None = None,
    variant: str | None = None,
    external_modes: Iterable[ExternalMode] = ("skip", "finish"),
) -> list[Sample]:
    """Load one CriticTool file.

    ``part``, ``cot`` and ``variant`` are read from the official path (``internal_error/`` vs
    ``external_error/``, ``_w_cot`` vs ``_wo_cot``, ``base_``/``evol_``) unless given. Sample ids are
    ``<variant>-<internal|skip|finish>-<record id>``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read the CriticTool file: {exc.strerror or exc}", path=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno
        ) from None
    if not isinstance(data, dict):
        raise DatasetError(f"expected one JSON object of id -> record, got {type(data).__name__}", path=path)
    doc = JsonDoc(path, text, data)
    doc.check_unique_keys()
    ctx = _FileContext(doc)
    if part is None:
        parent = path.parent.name
        part = (
            "internal" if parent == "internal_error" else "external" if parent == "external_error" else None
        )
    if cot is None:
        cot = "_w_cot" in path.name
    variant = variant or path.name.split("_data")[0]
    modes = list(external_modes)
    samples: list[Sample] = []
    for rid, record in data.items():
        if not isinstance(record, Mapping):
            raise ctx.error(rid, "", "expected a record object with 'query_prompt' and 'ground_truth'")
        messages = _messages(ctx, rid, record.get("query_prompt"))
        tools = _tools(ctx, rid, messages[0].content)
        gt = record.get("ground_truth")
        if not isinstance(record.get("error_type"), str | None):
            raise ctx.error(rid, "error_type", "expected the error type as a string (or null)")
        kind: Part = part or ("external" if isinstance(gt, list) else "internal")
        common: dict[str, Any] = {"benchmark": "critictool", "part": kind, "cot": cot, "variant": variant}
        common |= {"record_id": rid, "source": str(path), "raw": record}
        if kind == "internal":
            gold = [_action(ctx, rid, "ground_truth", gt)]
            etype = record.get("error_type") or None
            meta = common | {"error_type": etype, "external_mode": None, "gold": gold}
            samples.append(_sample(f"{variant}-internal-{rid}", messages, tools, gold, meta))
            continue
        if not isinstance(gt, list) or len(gt) < 2:
            raise ctx.error(
                rid, "ground_truth", "expected [failed action, next action] for an external error"
            )
        gold = [_action(ctx, rid, f"ground_truth[{i}]", a) for i, a in enumerate(gt[:2])]
        for mode in modes:
            meta = common | {"error_type": None, "external_mode": mode, "gold": gold}
            samples.append(_sample(f"{variant}-{mode}-{rid}", messages, tools, gold, meta))
    return samples


def _sample(
    sid: str, messages: list[Message], tools: list[Tool], gold: list[dict[str, Any]], meta: dict[str, Any]
) -> Sample:
    return Sample(id=sid, messages=messages, tools=tools, target=[_call(a) for a in gold], metadata=meta)


def load_critictool(
    root: str | Path,
    *,
    variants: Iterable[Variant | str] = ("base",),
    cot: bool = False,
    parts: Iterable[Part] = ("internal", "external"),
    external_modes: Iterable[ExternalMode] = ("skip", "finish"),
) -> list[Sample]:
    """Load the official files under ``root`` for the given variants and parts.

    A missing file raises :class:`~toolmend.DatasetError` with the path it expected.
    """
    root = Path(root)
    samples: list[Sample] = []
    for variant in variants:
        for part in parts:
            path = data_file(root, part, variant, cot)
            if not path.is_file():
                raise DatasetError(
                    "CriticTool file not found; download the dataset with `huggingface-cli download "
                    "chocckaka/CriticTool-Dataset --repo-type dataset --local-dir <root>`",
                    path=path,
                )
            samples += load_critictool_file(
                path, part=part, cot=cot, variant=variant, external_modes=external_modes
            )
    return samples
