"""API-Bank level-1 ("Call", API descriptions given) dialogues → one Sample per gold API call (``api-bank``).

Each ``*.jsonl`` file under ``level-1-given-desc/`` is one dialogue of ``User`` / ``AI``
utterances and ``API`` lines (``api_name``, ``param_dict``, recorded ``result``). As upstream,
every API line is a test point: the model sees the dialogue up to it — earlier calls as
assistant tool calls followed by their recorded results — and the descriptions of the APIs the
dialogue uses (from ``api_descriptions.json`` beside the folder), and must produce that call.

Upstream checks a call by running it in its sandbox; offline we compare the call itself (name
and arguments), which is what HiTEC's F1s measure. File names with ``level-2`` are multi-API
dialogues that upstream keeps in this folder (``metadata["level"]``); ``first_only=True`` keeps
the first call of each dialogue (ToolACE-R's "first step" samples).

>>> samples = ApiBank().load()  # the shared data folder
>>> len(samples), samples[0].target[0].name
(389, 'GetUserToken')
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from toolmend._errors import DatasetError, SpecError
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._base import BENCHMARKS
from toolmend.benchmarks._hitec import CallListBenchmark
from toolmend.benchmarks._io import UniqueIds, check_flat_spec, need, read_json_doc, read_jsonl
from toolmend.formats._tools import load_tool

__all__ = ["ApiBank", "load_api_bank", "load_api_bank_specs"]

_LEVEL = re.compile(r"level-(\d+)")


def load_api_bank_specs(path: str | Path) -> dict[str, Tool]:
    """``api_descriptions.json`` (a list of ``{name, description, input_parameters, …}``) → tools by name."""
    p = Path(path)
    doc = read_json_doc(p)
    if not isinstance(doc.value, list):
        raise DatasetError("expected a list of API descriptions", path=p)
    tools: dict[str, Tool] = {}
    unique = UniqueIds(p)
    for i, spec in enumerate(doc.value):
        line = doc.line(i)
        check_flat_spec(spec, path=p, line=line, field=f"[{i}]", keys=_SPEC_KEYS)
        try:
            tool = load_tool(spec, dialect="apibank")
        except SpecError as exc:
            raise DatasetError(str(exc), path=p, line=line, field=f"[{i}].name") from exc
        unique.add(tool.name, line or 0, field=f"[{i}].name")
        tools[tool.name] = tool
    return tools


_SPEC_KEYS = ("name", "description", "input_parameters", "output_parameters", "")


def _read_dialogue(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, row in read_jsonl(path):
        role = row.get("role") if isinstance(row, dict) else None
        if role in ("User", "AI"):
            if not isinstance(row.get("text"), str):
                raise DatasetError("expected the utterance as a string", path=path, line=n, field="text")
        elif role == "API":
            need(row.get("api_name"), str, "the API name as a string", path=path, line=n, field="api_name")
            need(row.get("param_dict"), dict, "an object of arguments", path=path, line=n, field="param_dict")
        else:
            raise DatasetError(
                f"expected role User, AI or API, got {role!r}", path=path, line=n, field="role"
            )
        rows.append((n, row))
    return rows


def _result_text(row: dict[str, Any]) -> str:
    result = row.get("result")
    if not isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False, default=str)
    payload = {"output": result.get("output"), "exception": result.get("exception")}
    return json.dumps(payload, ensure_ascii=False, default=str)


def load_api_bank(folder: str | Path, *, first_only: bool = False) -> list[Sample]:
    """Read ``folder/level-1-given-desc/*.jsonl`` (or a folder of such files) into Samples."""
    root = Path(folder)
    dialogues = root / "level-1-given-desc" if (root / "level-1-given-desc").is_dir() else root
    spec_path = root / "api_descriptions.json"
    if not spec_path.exists():
        spec_path = dialogues.parent / "api_descriptions.json"
    tools = load_api_bank_specs(spec_path)
    files = sorted(dialogues.glob("*.jsonl"))
    if not files:
        raise DatasetError("no dialogue files (*.jsonl) here", path=dialogues)
    samples: list[Sample] = []
    for path in files:
        rows = _read_dialogue(path)
        for n, row in rows:
            if row["role"] == "API" and row["api_name"] not in tools:
                raise DatasetError(
                    f"API {row['api_name']!r} has no description in {spec_path.name}",
                    path=path,
                    line=n,
                    field="api_name",
                )
        used = list(dict.fromkeys(r["api_name"] for _, r in rows if r["role"] == "API"))
        offered = [tools[u] for u in used]
        level = _LEVEL.search(path.name)
        history: list[Message] = []
        step = 0
        for line, row in rows:
            if row["role"] == "User":
                history.append(Message(role="user", content=row["text"]))
            elif row["role"] == "AI":
                history.append(Message(role="assistant", content=row["text"]))
            else:
                call = ToolCall(name=row["api_name"], arguments=row["param_dict"], id=f"call_{step}")
                if not first_only or step == 0:
                    samples.append(
                        Sample(
                            id=f"{path.stem}#{step}",
                            messages=list(history),
                            tools=offered,
                            target=[call.model_copy(update={"id": None})],
                            metadata={
                                "file": path.name,
                                "line": line,
                                "step": step,
                                "level": int(level.group(1)) if level else None,
                                "result": row.get("result"),
                            },
                        )
                    )
                history.append(Message(role="assistant", tool_calls=[call]))
                history.append(
                    Message(role="tool", content=_result_text(row), tool_call_id=call.id, name=call.name)
                )
                step += 1
    return samples


@BENCHMARKS.register("api-bank")
class ApiBank(CallListBenchmark):
    """API-Bank level-1 (given descriptions), scored with HiTEC's F1s plus ToolACE-R accuracy/overlap."""

    load_options = ("first_only",)
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "api-bank"
    default_data = "data/api-bank"

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Option ``first_only``: keep only the first call of each dialogue."""
        self.check_load_options(options)
        return load_api_bank(self._data_path(path), first_only=bool(options.get("first_only", False)))
