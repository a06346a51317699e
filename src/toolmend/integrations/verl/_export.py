"""The verl export: world tasks (``rl``) or verified turn rows (``sft``, ``kto``) as the parquet
rows and tools YAML of verl's ``tool_agent`` loop (see the package docstring).

Every row names a world task: its tools run in that task's world through :class:`WorldTool`,
whose ``create_kwargs`` (in ``extra_info.tools_kwargs``, the same for every tool of a row, and
every row carrying every tool's entry, so that parquet never fills a missing one with nulls)
hold the task id, the world's seed, the fault schedule and the calls of the turns already in the
prompt (``history``, run before the rollout's own). ``ground_truth`` is the gold calls as JSON
text; a ``kto`` row (one per distinct prompt) keeps its checker-verified negatives in
``extra_info.negatives``. ``extra_info.tool_selection`` lists the tools offered (verl shows a
row only those; empty: all), as ``--max-tools`` chose them.

>>> rows, info = verl_rows("rl", seed=0, limit=2)
>>> rows[0]["agent_name"], rows[0]["reward_model"]["style"], [m["role"] for m in rows[0]["prompt"]]
('tool_agent', 'rule', ['system', 'user'])
>>> kwargs = rows[0]["extra_info"]["tools_kwargs"]["todo_create"]["create_kwargs"]
>>> kwargs["task_id"] == rows[0]["extra_info"]["task_id"], kwargs["history"]
(True, '[]')
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.formats import parse_calls, to_openai_tool
from toolmend.train._data import build_rows, gold_json
from toolmend.train._world_reward import _played
from toolmend.world import WORLD_TOOLS, Task, generate_tasks
from toolmend.world._rl import system_prompt

__all__ = ["VERL_KINDS", "VerlExport", "export_verl", "tools_yaml", "verl_rows"]

VERL_KINDS = ("rl", "sft", "kto")
DATA_SOURCE = "toolmend/world"
TOOL_CLASS = "toolmend.integrations.verl.WorldTool"
REWARD_PATH = "pkg://toolmend.integrations.verl"


class VerlExport(BaseModel):
    """What :func:`export_verl` wrote."""

    kind: str
    seed: int
    rows: int
    tasks: int
    files: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    """The verl command-line options that read these files (paths as written)."""


def _history_json(turns: Sequence[Sequence[ToolCall]]) -> str:
    return json.dumps(
        [[c.model_dump(mode="json", exclude_defaults=True) for c in turn] for turn in turns],
        ensure_ascii=False,
    )


def _tools_kwargs(task_id: str, seed: int, faults: str, history: str) -> dict[str, Any]:
    create = {"task_id": task_id, "seed": seed, "faults": faults, "history": history}
    return {t.name: {"create_kwargs": dict(create)} for t in WORLD_TOOLS.tools}


def _row(
    index: int,
    kind: str,
    task_id: str,
    seed: int,
    prompt: list[dict[str, str]],
    gold: str,
    offered: list[str],
    faults: str,
    history: str = "[]",
    negatives: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    messages = [{"role": "system", "content": system_prompt(seed, tools=False)}, *prompt]
    extra: dict[str, Any] = {
        "index": index,
        "kind": kind,
        "task_id": task_id,
        "seed": seed,
        "faults": faults,
        "history": history,
        "tool_selection": offered,
        "need_tools_kwargs": True,
        "tools_kwargs": _tools_kwargs(task_id, seed, faults, history),
    }
    if negatives is not None:
        extra["negatives"] = negatives
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": m["role"], "content": m["content"]} for m in messages],
        "ability": "tool_use",
        "reward_model": {"style": "rule", "ground_truth": gold},
        "extra_info": extra,
        "agent_name": "tool_agent",
    }


def _offered_names(task: Task, max_tools: int | None, rng: random.Random) -> list[str]:
    if max_tools is None or max_tools >= len(WORLD_TOOLS.tools):
        return []
    used = list(dict.fromkeys(c.name for c in task.calls))
    others = [t.name for t in WORLD_TOOLS.tools if t.name not in used]
    extra = rng.sample(others, max(0, min(len(others), max_tools - len(used))))
    keep = set(used) | set(extra)
    return [t.name for t in WORLD_TOOLS.tools if t.name in keep]


def _row_tools(row: dict[str, Any]) -> list[str]:
    names = [t["function"]["name"] for t in json.loads(row["tools"])]
    return [] if len(names) >= len(WORLD_TOOLS.tools) else names


def verl_rows(
    kind: str,
    *,
    seed: int = 0,
    limit: int | None = None,
    max_tools: int | None = None,
    faults: str = "none",
) -> tuple[list[dict[str, Any]], int]:
    """The verl rows of ``kind`` (``rl``: one per world task; ``sft`` / ``kto``: one per verified
    turn row, ``kto`` one per distinct prompt) and the number of world tasks they come from."""
    if kind not in VERL_KINDS:
        raise ConfigError(f"the verl export builds {', '.join(VERL_KINDS)} rows, not {kind!r}")
    if kind == "rl":
        tasks = generate_tasks(seed)
        tasks = tasks[:limit] if limit is not None else tasks
        rng = random.Random(f"toolmend-verl:{seed}")
        rows = [
            _row(
                i,
                kind,
                t.id,
                t.seed,
                [{"role": "user", "content": t.query}],
                gold_json(t.calls),
                _offered_names(t, max_tools, rng),
                faults,
            )  # fmt: skip
            for i, t in enumerate(tasks)
        ]
        return rows, len(tasks)
    built, report = build_rows(kind, source="world", seed=seed, limit=limit, max_tools=max_tools)
    rows = []
    if kind == "sft":
        for r in built:
            history = _history_json(_played(r["prompt"]))
            rows.append(_row(len(rows), kind, r["trace_id"], r["seed"], r["prompt"], r["gold_calls"],
                             _row_tools(r), faults, history))  # fmt: skip
        return rows, report.traces
    # kto: the desirable completion of a prompt is its gold; its undesirable ones, the negatives.
    groups: dict[str, dict[str, Any]] = {}
    for r in built:
        key = json.dumps([r["trace_id"], r["prompt"], r["tools"]], ensure_ascii=False)
        group = groups.setdefault(key, {"row": r, "gold": None, "negatives": []})
        text = r["completion"][0]["content"]
        if r["label"]:
            group["gold"] = text
        elif {"completion": text, "code": r["code"]} not in group["negatives"]:
            group["negatives"].append({"completion": text, "code": r["code"]})
    for group in groups.values():
        if group["gold"] is None:
            continue
        r = group["row"]
        rows.append(_row(len(rows), kind, r["trace_id"], r["seed"], r["prompt"],
                         gold_json(parse_calls(group["gold"]).calls), _row_tools(r), faults,
                         _history_json(_played(r["prompt"])), group["negatives"]))  # fmt: skip
    return rows, report.traces


def tools_yaml(faults: str = "none") -> str:
    """verl's tools config for every world tool, one :class:`WorldTool` each. Written as JSON,
    which is YAML too (verl reads it with OmegaConf), so the schemas keep every constraint as
    toolmend states it and no YAML writer is needed."""
    entries = [
        {
            "class_name": TOOL_CLASS,
            "config": {"type": "native", "faults": faults},
            "tool_schema": to_openai_tool(t),
        }
        for t in WORLD_TOOLS.tools
    ]
    return (
        "# verl tools config: toolmend's world tools (toolmend build --format verl)\n"
        + json.dumps({"tools": entries}, ensure_ascii=False, indent=1)
        + "\n"
    )


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            "the verl export writes parquet and needs pyarrow: pip install 'toolmend[verl]'"
        ) from None
    pq.write_table(pa.Table.from_pylist(rows), path)


def export_verl(
    kind: str,
    out: str | Path,
    *,
    seed: int = 0,
    limit: int | None = None,
    max_tools: int | None = None,
    faults: str = "none",
) -> VerlExport:
    """Write ``out/train.parquet``, ``out/tools.yaml`` and ``out/export.json`` (see the module
    docstring) and return what was written."""
    rows, tasks = verl_rows(kind, seed=seed, limit=limit, max_tools=max_tools, faults=faults)
    if not rows:
        raise ConfigError(f"no {kind} rows were built for the world of seed {seed}")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    data, tools = folder / "train.parquet", folder / "tools.yaml"
    _write_parquet(rows, data)
    tools.write_text(tools_yaml(faults), encoding="utf-8")
    info = VerlExport(
        kind=kind,
        seed=seed,
        rows=len(rows),
        tasks=tasks,
        files=[str(data), str(tools)],
        options=[
            f"data.train_files={data}",
            "actor_rollout_ref.rollout.multi_turn.enable=true",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
            f"reward.custom_reward_function.path={REWARD_PATH}",
            "reward.custom_reward_function.name=compute_score",
        ],
    )
    (folder / "export.json").write_text(info.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return info
