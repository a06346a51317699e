"""Reading BFCL question files and their possible answers into :class:`~toolmend.Sample` objects.

Files are ``BFCL_v<N>_<category>.json`` (JSON Lines despite the extension) with the answers in
``possible_answer/`` under the same name; the (ir)relevance categories have no answer file.
Each sample keeps:

- ``tools``: the offered functions, loaded with :func:`toolmend.formats.load_tools` (BFCL's own
  type names survive as ``x-original-type``);
- ``target``: one call per expected call, built from the *first* acceptable value of each
  parameter (a parameter whose first acceptable value is ``""`` — "may be omitted" — is left out
  unless the schema requires it);
- ``metadata["ground_truth"]``: BFCL's full ``[{name: {param: [acceptable values]}}]``, which is
  what the checker scores against; ``metadata["category"]`` from the file name;
- ``metadata["unsatisfiable"]``: only where an answer gives a parameter an *empty* list of
  acceptable values (``function.param`` names). No reply can pass such a sample under BFCL's
  checker; in the v4 files this is ``live_simple_106-63-0`` and ``live_simple_112-68-0``.

>>> from toolmend._shared import shared_dir
>>> samples = load_bfcl(shared_dir() / "data" / "bfcl", categories=["simple_python"])
>>> samples[0].target[0].name, samples[0].metadata["category"]
('calculate_triangle_area', 'simple_python')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from toolmend._errors import DatasetError
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._io import UniqueIds, check_schema, need, read_jsonl
from toolmend.benchmarks.bfcl._checker import bfcl_type
from toolmend.formats._tools import load_tools

__all__ = [
    "AST_CATEGORIES",
    "RELEVANCE_CATEGORIES",
    "SUPPORTED_CATEGORIES",
    "category_of",
    "load_bfcl",
    "target_from_answers",
]

AST_CATEGORIES = (
    "simple_python",
    "simple",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""Categories scored by the AST checker (``simple`` is the pre-v4 name of ``simple_python``)."""

RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")
"""Categories scored on whether any call was made; they have no answer file."""

SUPPORTED_CATEGORIES = AST_CATEGORIES + RELEVANCE_CATEGORIES

_FILE = re.compile(r"^BFCL_v\d+_(\w+?)\.json$")


def category_of(path: str | Path) -> str | None:
    """The category a BFCL file name encodes, or None when it is not a BFCL question file.

    >>> category_of("data/BFCL_v4_parallel_multiple.json")
    'parallel_multiple'
    """
    match = _FILE.match(Path(path).name)
    return match.group(1) if match else None


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    records = list(read_jsonl(path, objects=True))
    for n, record in records:
        if not isinstance(record.get("id"), str):
            raise DatasetError("expected a string id", path=path, line=n, field="id")
    return records


def _messages(record: dict[str, Any], path: Path, line: int) -> list[Message]:
    turns = record.get("question")
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], list):
        raise DatasetError(
            "expected a list of turns, each a list of messages", path=path, line=line, field="question"
        )
    return [question_message(msg, path, line, f"question[0][{i}]") for i, msg in enumerate(turns[0])]


def question_message(msg: Any, path: Path, line: int, field: str) -> Message:
    """One message of a BFCL question (any turn), or a :class:`DatasetError` naming ``field``."""
    if (
        not isinstance(msg, dict)
        or msg.get("role") not in ("system", "user", "assistant")
        or not isinstance(msg.get("content"), str)
    ):
        raise DatasetError(
            "expected {role: system|user|assistant, content: string}", path=path, line=line, field=field
        )
    return Message(role=msg["role"], content=msg["content"])


def _check_answers(answers: Any, path: Path, line: int) -> list[dict[str, dict[str, list[Any]]]]:
    if not isinstance(answers, list):
        raise DatasetError("expected a list of expected calls", path=path, line=line, field="ground_truth")
    for i, answer in enumerate(answers):
        where = f"ground_truth[{i}]"
        if not isinstance(answer, dict) or len(answer) != 1:
            raise DatasetError(
                "expected {function_name: {param: [values]}}", path=path, line=line, field=where
            )
        params = next(iter(answer.values()))
        if not isinstance(params, dict):
            raise DatasetError("expected the parameters as an object", path=path, line=line, field=where)
        for name, options in params.items():
            if not isinstance(options, list):
                raise DatasetError(
                    "expected a list of acceptable values", path=path, line=line, field=f"{where}.{name}"
                )
    return answers


def _first(options: list[Any], schema: Any) -> tuple[bool, Any]:
    """(present, value) for the first acceptable value; dicts of acceptable lists are unwrapped."""
    if not options:
        return False, None
    value = options[0]
    if value == "":
        return False, None
    kind = bfcl_type(schema)
    item_kind = bfcl_type(schema.get("items")) if isinstance(schema, dict) else None
    if kind == "dict" and isinstance(value, dict):
        return True, _unwrap(value)
    if kind in ("array", "tuple") and item_kind == "dict" and isinstance(value, list):
        return True, [_unwrap(v) if isinstance(v, dict) else v for v in value]
    return True, value


def _unwrap(candidate: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, options in candidate.items():
        if isinstance(options, list):
            if options and options[0] != "":
                out[key] = options[0]
        else:
            out[key] = options
    return out


def target_from_answers(
    answers: Sequence[dict[str, dict[str, list[Any]]]], tools: Sequence[Tool]
) -> list[ToolCall]:
    """One call per expected call, from the first acceptable values (see the module docstring)."""
    calls: list[ToolCall] = []
    for answer in answers:
        name, params = next(iter(answer.items()))
        tool = next((t for t in tools if t.name == name), None)
        props = tool.properties if tool else {}
        required = set(tool.required) if tool else set()
        args: dict[str, Any] = {}
        for param, options in params.items():
            if param not in props and "" in options:
                # Answer files sometimes list a nested key at top level ("type" of a list item);
                # supplying it would be an unexpected parameter, and "" allows leaving it out.
                continue
            present, value = _first(options, props.get(param))
            if not present and param in required:
                non_empty = [o for o in options if o != ""]
                present, value = _first(non_empty, props.get(param))
            if present:
                args[param] = value
        calls.append(ToolCall(name=name, arguments=args))
    return calls


def _question_files(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(root.glob("BFCL_v*_*.json")):
        category = category_of(path)
        if category in SUPPORTED_CATEGORIES:
            found[category] = path
    return found


def load_bfcl(path: str | Path, categories: Iterable[str] | None = None) -> list[Sample]:
    """Load BFCL samples from a data folder (every supported category present, or ``categories``)
    or from one question file.

    Raises :class:`~toolmend.DatasetError` for a missing file, a malformed line, or an answer file
    whose ids do not line up with the questions.
    """
    root = Path(path)
    if root.is_file():
        category = category_of(root)
        if category is None:
            raise DatasetError("expected a file named BFCL_v<N>_<category>.json", path=root)
        files = {category: root}
        answer_dir = root.parent / "possible_answer"
    elif root.is_dir():
        files = _question_files(root)
        answer_dir = root / "possible_answer"
    else:
        raise DatasetError("no such file or folder", path=root)
    if categories is not None:
        wanted = list(dict.fromkeys(categories))
        unknown = [c for c in wanted if c not in SUPPORTED_CATEGORIES]
        if unknown:
            raise DatasetError(
                f"unsupported BFCL categories {unknown}; supported: {', '.join(SUPPORTED_CATEGORIES)}",
                path=root,
            )
        missing = [c for c in wanted if c not in files]
        if missing:
            raise DatasetError(f"no question file for categories {missing}", path=root)
        files = {c: files[c] for c in wanted}
    samples: list[Sample] = []
    for category, qpath in files.items():
        samples.extend(_load_category(category, qpath, answer_dir / qpath.name))
    return samples


def _check_functions(functions: list[Any], path: Path, line: int) -> None:
    """Field types of the function docs, so a corrupted one is named instead of crashing later."""
    for j, doc in enumerate(functions):
        where = f"function[{j}]"
        need(doc, dict, "a function doc object", path=path, line=line, field=where)
        need(
            doc.get("name"), str, "the function name as a string", path=path, line=line, field=f"{where}.name"
        )
        if doc.get("description") is not None:
            need(doc["description"], str, "a string", path=path, line=line, field=f"{where}.description")
        check_schema(doc.get("parameters"), path=path, line=line, field=f"{where}.parameters")


def _load_category(category: str, qpath: Path, apath: Path) -> list[Sample]:
    questions = _read_jsonl(qpath)
    answers: list[tuple[int, dict[str, Any]]] | None = None
    if category in AST_CATEGORIES:
        if not apath.is_file():
            raise DatasetError(f"the {category} category needs its possible-answer file", path=apath)
        answers = _read_jsonl(apath)
        if len(answers) != len(questions):
            raise DatasetError(
                f"{len(answers)} answers for {len(questions)} questions in {qpath.name}", path=apath
            )
    samples: list[Sample] = []
    unique = UniqueIds(qpath)
    for i, (line, record) in enumerate(questions):
        unique.add(record["id"], line)
        functions = record.get("function")
        if not isinstance(functions, list):
            raise DatasetError("expected a list of function docs", path=qpath, line=line, field="function")
        _check_functions(functions, qpath, line)
        try:
            tools = load_tools(functions, dialect="bfcl")
        except DatasetError as exc:
            raise DatasetError(exc.reason, path=qpath, line=line, field=f"function{exc.field or ''}") from exc
        metadata: dict[str, Any] = {"category": category}
        target: list[ToolCall] = []
        if answers is not None:
            aline, answer = answers[i]
            if answer["id"] != record["id"]:
                raise DatasetError(
                    f"answer id {answer['id']!r} does not match question id {record['id']!r}",
                    path=apath,
                    line=aline,
                    field="id",
                )
            truth = _check_answers(answer.get("ground_truth"), apath, aline)
            metadata["ground_truth"] = truth
            empty = [f"{name}.{p}" for a in truth for name, ps in a.items() for p, o in ps.items() if o == []]
            if empty:
                # No value is acceptable for these: BFCL's checker fails every answer to this sample.
                metadata["unsatisfiable"] = empty
            target = target_from_answers(truth, tools)
        samples.append(
            Sample(
                id=record["id"],
                messages=_messages(record, qpath, line),
                tools=tools,
                target=target,
                metadata=metadata,
            )
        )
    return samples
