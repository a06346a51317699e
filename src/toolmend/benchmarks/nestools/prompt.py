"""The NesTools evaluation prompt and the candidate tool list it shows.

The official prompts (``inference/test_prompt.jsonl``) and the ~30k-tool pool their distractors
were retrieved from are **not public**, so toolmend builds its own candidate lists: each sample's
gold tools plus, per gold tool, the ``k`` nearest tools by sentence embedding drawn from the
*other samples'* tools (about 3,000 distinct ids over the test set), dropping any whose name is
within normalised Levenshtein distance < 0.2 of a gold name (the paper's filter), then shuffled
with a seed. Scores on these lists are comparable with each other, not with the paper's tables.

A user template replaces the default one: a text (or a file) in which the literal markers
``{apis}`` (the candidate tools, one JSON object per line, each with its integer ``api_id``) and
``{task}`` (the task text) are substituted; other braces are left alone, so JSON examples in a
template need no escaping.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from rapidfuzz.distance import Levenshtein

from toolmend.errors import ConfigError
from toolmend.formats.tools import ORIGINAL_TYPE
from toolmend.schema import Sample, Tool

__all__ = [
    "DEFAULT_TEMPLATE",
    "TextEncoder",
    "build_candidates",
    "candidate_tools",
    "load_template",
    "render_prompt",
    "render_tool",
]

DEFAULT_TEMPLATE = """\
Below is a list of APIs and a task. Decide which APIs must be called, and in which order, to \
complete the task, and answer with those calls only.

Answer with one JSON list. Every call is an object with four keys:
- "api_name": the API's name;
- "api_id": the integer id shown with that API;
- "parameters": an object mapping parameter names to values;
- "responses": an object mapping each of the API's return values, in the order the API lists \
them, to a placeholder "API_call_<n>". The placeholders are numbered 0, 1, 2, ... across the \
whole answer, never restarting at a new call.

Rules:
1. Fill in every required parameter. If the task does not give a value for one, write "UNK".
2. Add an optional parameter only when the task calls for it.
3. When a parameter needs something an earlier call returns, write that return value's \
placeholder (for example "API_call_1") as the parameter value.
4. Write nothing except the JSON list.

For example, with a tool "find_city" (returns: city, country) and a tool "get_forecast" that needs \
a city, the answer has this shape:
[{"api_name": "find_city", "api_id": 17, "parameters": {"landmark": "Eiffel Tower"}, \
"responses": {"city": "API_call_0", "country": "API_call_1"}}, \
{"api_name": "get_forecast", "api_id": 4, "parameters": {"city": "API_call_0", "days": 3}, \
"responses": {"forecast": "API_call_2"}}]

APIs:
{apis}

Task:
{task}

Answer:
"""


class TextEncoder(Protocol):
    """Anything that embeds texts as L2-normalised rows, like :class:`toolmend.compare.Embedder`."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def load_template(template: str | Path | None) -> str:
    """``None`` → the default template; a :class:`~pathlib.Path` (or a string naming an existing
    file) → that file's text; any other string → the template itself. It must contain ``{task}``."""
    if template is None:
        return DEFAULT_TEMPLATE
    text = str(template)
    path = Path(template) if isinstance(template, Path) or ("\n" not in text and len(text) < 4096) else None
    if path is not None and (isinstance(template, Path) or path.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read prompt template {path}: {exc.strerror or exc}") from exc
    if "{task}" not in text:
        raise ConfigError("a NesTools prompt template must contain the marker {task} (and usually {apis})")
    return text


def _param_block(schema: dict[str, Any] | None) -> dict[str, Any]:
    props = (schema or {}).get("properties", {})
    out: dict[str, Any] = {}
    for name, spec in props.items():
        entry = {"type": spec.get(ORIGINAL_TYPE, spec.get("type", ""))}
        if spec.get("description"):
            entry["description"] = spec["description"]
        out[name] = entry
    return out


def render_tool(tool: Tool) -> dict[str, Any]:
    """A tool in NesTools' own shape, with its ``api_id`` right after the name (as the official
    prompt has it)."""
    return {
        "api_name": tool.name,
        "api_id": tool.metadata.get("api_id"),
        "api_description": tool.description,
        "parameters": _param_block(tool.parameters),
        "required": tool.required,
        "responses": _param_block(tool.returns),
    }


def render_prompt(sample: Sample, template: str, tools: Sequence[Tool] | None = None) -> str:
    """Fill ``template`` for ``sample``: ``{apis}`` with ``tools`` (default: the sample's own),
    ``{task}`` with its task."""
    listed = sample.tools if tools is None else tools
    apis = "\n".join(json.dumps(render_tool(t), ensure_ascii=False) for t in listed)
    task = str(sample.metadata.get("task") or (sample.messages[-1].content if sample.messages else ""))
    return template.replace("{apis}", apis).replace("{task}", task)


def _tool_text(tool: Tool) -> str:
    return f"{tool.name}: {tool.description}"


def candidate_tools(
    samples: Sequence[Sample],
    encoder: TextEncoder,
    *,
    per_tool: int = 5,
    seed: int = 0,
    max_name_distance: float = 0.2,
) -> list[list[Tool]]:
    """Each sample's candidate list (parallel to ``samples``): its gold tools plus up to
    ``per_tool`` distractors per gold tool, shuffled deterministically from ``seed`` and the
    sample id.

    The pool is every distinct tool (by ``api_id``) of ``samples``. For each gold tool, pool tools
    are taken by decreasing cosine similarity of ``"name: description"`` embeddings, skipping the
    sample's own tools, tools already taken and tools whose name is within normalised
    Levenshtein distance ``< max_name_distance`` of any gold name. The pool is embedded in one
    ``encoder.encode`` call.
    """
    if per_tool < 0:
        raise ConfigError(f"per_tool must be >= 0, got {per_tool}")
    pool: dict[Any, Tool] = {}
    for s in samples:
        for t in s.tools:
            pool.setdefault(t.metadata.get("api_id", t.name), t)
    pool_keys = list(pool)
    pool_tools = [pool[k] for k in pool_keys]
    if per_tool and pool_tools:
        # The first run on a cold cache spends minutes here; say so rather than sit silent.
        logging.getLogger("toolmend.status").info("preparing: embedding %d tools", len(pool_tools))
    vectors = encoder.encode([_tool_text(t) for t in pool_tools]) if per_tool and pool_tools else None
    row = {k: i for i, k in enumerate(pool_keys)}
    out: list[list[Tool]] = []
    for s in samples:
        gold_keys = [t.metadata.get("api_id", t.name) for t in s.tools]
        gold_names = [t.name for t in s.tools]
        chosen: list[Tool] = []
        taken = set(gold_keys)
        if vectors is not None:
            for key in gold_keys:
                sims = vectors @ vectors[row[key]]
                added = 0
                for j in np.argsort(-sims, kind="stable"):
                    cand_key = pool_keys[int(j)]
                    if cand_key in taken:
                        continue
                    cand = pool_tools[int(j)]
                    if any(
                        Levenshtein.normalized_distance(cand.name, g) < max_name_distance for g in gold_names
                    ):
                        continue
                    taken.add(cand_key)
                    chosen.append(cand)
                    added += 1
                    if added >= per_tool:
                        break
        tools = list(s.tools) + chosen
        random.Random(f"{seed}:{s.id}").shuffle(tools)
        out.append(tools)
    return out


def build_candidates(
    samples: Sequence[Sample],
    encoder: TextEncoder,
    *,
    per_tool: int = 5,
    seed: int = 0,
    max_name_distance: float = 0.2,
) -> list[Sample]:
    """Copies of ``samples`` whose ``tools`` are their :func:`candidate_tools` lists, with
    ``metadata["distractors"]`` the number added. The gold tools stay listed in
    ``metadata["api_names"]`` / ``["api_ids"]``.
    """
    lists = candidate_tools(
        samples, encoder, per_tool=per_tool, seed=seed, max_name_distance=max_name_distance
    )
    return [
        s.model_copy(
            update={"tools": tools, "metadata": {**s.metadata, "distractors": len(tools) - len(s.tools)}}
        )
        for s, tools in zip(samples, lists, strict=True)
    ]
