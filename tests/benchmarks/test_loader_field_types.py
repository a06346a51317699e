"""Corrupted benchmark files get a DatasetError naming file, line and field, never a raw
TypeError/KeyError/AttributeError; duplicate ids are reported at load time with both lines
(issue 16, item 10).

Each case copies a few records of the real data (the CriticTool test fixtures: the shared folder
has no CriticTool files) into ``tmp_path`` and sets every field of the first records, one at a
time, to a value of each JSON type. A loader may accept a value of another type only where the
format allows any value (gold argument values, recorded results); everything else must be the
one DatasetError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolmend._errors import DatasetError
from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks

WRONG: list[Any] = [None, 5, "x", {"k": 1}, [1], True]
CRITICTOOL_FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if len(prefix) < 5 and isinstance(value, dict):
        for k, v in list(value.items())[:8]:
            out += _paths(v, (*prefix, k))
    elif len(prefix) < 5 and isinstance(value, list):
        for i, v in enumerate(value[:2]):
            out += _paths(v, (*prefix, i))
    return out


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for k in path[:-1]:
        value = value[k]
    value[path[-1]] = new


def _head(path: Path, n: int) -> list[Any]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[:n]]


class Case:
    """Files (relative path -> JSON Lines rows, or a JSON document for the paths in ``documents``),
    the records to corrupt (relative path, row index or key) and how the benchmark loads them."""

    def __init__(
        self,
        files: dict[str, Any],
        targets: list[tuple[str, Any]],
        load: Callable[[Path], Any],
        documents: tuple[str, ...] = (),
    ) -> None:
        self.files, self.targets, self.load, self.documents = files, targets, load, documents

    def write(self, root: Path, rel: str | None = None, content: Any = None) -> None:
        for name, value in self.files.items():
            value = content if name == rel else value
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if name in self.documents:
                path.write_text(json.dumps(value, indent=2), encoding="utf-8")
            else:
                _write_lines(path, value)


def _bench(name: str, **options: Any) -> Callable[[Path], Any]:
    return lambda root: BENCHMARKS.get(name)().load(root, **options)


def _cases(data: Path) -> dict[str, Case]:
    bfcl = {}
    for cat in ("simple_python", "parallel_multiple"):
        q = f"BFCL_v4_{cat}.json"
        bfcl[f"bfcl-{cat}"] = Case(
            {
                q: _head(data / "bfcl" / q, 2),
                f"possible_answer/{q}": _head(data / "bfcl/possible_answer" / q, 2),
            },
            [(q, 0), (f"possible_answer/{q}", 0)],
            _bench("bfcl", categories=[cat]),
        )
    critic: dict[str, Any] = {}
    for part in ("internal_error", "external_error"):
        doc = json.loads((CRITICTOOL_FIXTURES / part / "base_data_wo_cot.json").read_text(encoding="utf-8"))
        critic[f"{part}/base_data_wo_cot.json"] = {k: doc[k] for k in list(doc)[:2]}
    dialogue = _head(data / "api-bank/level-1-given-desc/AddAgenda-level-1-1.jsonl", 100)
    used = {r.get("api_name") for r in dialogue}
    specs = [
        s for s in json.loads((data / "api-bank/api_descriptions.json").read_text()) if s["name"] in used
    ]
    seal = _head(data / "seal-tools/test_in_domain.jsonl", 400)
    seal = seal[:1] + [r for r in seal if "difficult" in r["id"]][:1]
    seal_used = {c["api"] for r in seal for c in r["calling"]}
    seal_tools = [t for t in _head(data / "seal-tools/tool.jsonl", 10**6) if t["api_name"] in seal_used]
    return {
        **bfcl,
        "critictool": Case(
            critic, [(p, next(iter(d))) for p, d in critic.items()], _bench("critictool"), tuple(critic)
        ),
        "toolalpaca": Case(
            {"eval_real.json": json.loads((data / "toolalpaca/eval_real.json").read_text())[:2]},
            [("eval_real.json", 0)],
            _bench("toolalpaca"),
            ("eval_real.json",),
        ),
        "api-bank": Case(
            {"api_descriptions.json": specs, "level-1-given-desc/AddAgenda-level-1-1.jsonl": dialogue},
            [("api_descriptions.json", 0)]
            + [("level-1-given-desc/AddAgenda-level-1-1.jsonl", i) for i in (0, 1, 9)],
            _bench("api-bank"),
            ("api_descriptions.json",),
        ),
        "seal-tools": Case(
            {"tool.jsonl": seal_tools, "test_in_domain.jsonl": seal},
            [("tool.jsonl", 0), ("test_in_domain.jsonl", 0), ("test_in_domain.jsonl", 1)],
            _bench("seal-tools", split="in_domain"),
        ),
        "nestools": Case(
            {
                "test_data.jsonl": _head(data / "nestools/test_data.jsonl", 2),
                "test_api_ids.jsonl": _head(data / "nestools/test_api_ids.jsonl", 2),
            },  # fmt: skip
            [("test_data.jsonl", 0), ("test_api_ids.jsonl", 0)],
            _bench("nestools"),
        ),
        "reflection-bench": Case(
            {"test_qwen_sample.jsonl": _head(data / "tool-reflection-bench/test_qwen_sample.jsonl", 2)},
            [("test_qwen_sample.jsonl", 0)],
            _bench("reflection-bench"),
        ),
    }


CASES = ["bfcl-simple_python", "bfcl-parallel_multiple", "critictool", "toolalpaca", "api-bank", "seal-tools",
         "nestools", "reflection-bench"]  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_every_wrong_field_type_is_a_dataset_error(tmp_path: Path, data_dir: Path, name: str) -> None:
    load_builtin_benchmarks()
    case = _cases(data_dir)[name]
    case.write(tmp_path)
    case.load(tmp_path)  # the copied records load as they are
    errors = 0
    for rel, key in case.targets:
        for path in _paths(case.files[rel][key]):
            for wrong in WRONG:
                mutated = json.loads(json.dumps(case.files[rel]))
                _set(mutated[key], path, wrong)
                case.write(tmp_path, rel, mutated)
                try:
                    case.load(tmp_path)
                except DatasetError as exc:
                    errors += 1
                    where = f"{rel}[{key!r}]{list(path)} = {wrong!r}: {exc}"
                    assert exc.path is not None and exc.line is not None and exc.field, where
                    # A value of the right type may break a link to another file (an id, an API
                    # name), reported there; a value of the wrong type is named where it is.
                    before = case.files[rel][key]
                    for k in path:
                        before = before[k]
                    if type(before) is not type(wrong):
                        assert exc.path == str(tmp_path / rel), where
    assert errors >= 20


def _write_lines(path: Path, rows: list[Any]) -> None:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


def test_duplicate_ids_name_both_lines(tmp_path: Path, data_dir: Path) -> None:
    load_builtin_benchmarks()
    nestools = tmp_path / "nestools"
    nestools.mkdir()
    rows = _head(data_dir / "nestools/test_data.jsonl", 2)
    _write_lines(nestools / "test_data.jsonl", [rows[0], rows[1], rows[0]])
    _write_lines(nestools / "test_api_ids.jsonl", _head(data_dir / "nestools/test_api_ids.jsonl", 2))
    with pytest.raises(DatasetError, match=r"line 3, field 'test_id': duplicate id '1': also on line 1"):
        BENCHMARKS.get("nestools")().load(nestools)

    # CriticTool: a repeated record id, which JSON itself would silently overwrite.
    critic = tmp_path / "critictool"
    for part in ("internal_error", "external_error"):
        (critic / part).mkdir(parents=True)
        text = (CRITICTOOL_FIXTURES / part / "base_data_wo_cot.json").read_text(encoding="utf-8")
        (critic / part / "base_data_wo_cot.json").write_text(text, encoding="utf-8")
    internal = critic / "internal_error" / "base_data_wo_cot.json"
    doc = json.loads(internal.read_text(encoding="utf-8"))
    first, second = list(doc)[:2]
    body = json.dumps(doc, indent=2)
    # Rename the second record to the first one's id.
    internal.write_text(body.replace(f'\n  "{second}": ', f'\n  "{first}": ', 1), encoding="utf-8")
    lines = internal.read_text(encoding="utf-8").splitlines()
    at = [n for n, line in enumerate(lines, 1) if line.startswith(f'  "{first}": ')]
    with pytest.raises(
        DatasetError, match=rf"line {at[1]}, field '{first}': duplicate id '{first}': also on line {at[0]}"
    ):
        BENCHMARKS.get("critictool")().load(critic)

    # ToolAlpaca: two tools of one name give the same sample ids.
    alpaca = tmp_path / "toolalpaca"
    alpaca.mkdir()
    tools = json.loads((data_dir / "toolalpaca/eval_real.json").read_text(encoding="utf-8"))[:2]
    tools[1]["Name"] = tools[0]["Name"]
    (alpaca / "eval_real.json").write_text(json.dumps(tools, indent=1), encoding="utf-8")
    lines = (alpaca / "eval_real.json").read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line == " {"]
    with pytest.raises(
        DatasetError, match=rf"line {starts[1]}, field '\[1\].Name': duplicate id .*also on line {starts[0]}"
    ):
        BENCHMARKS.get("toolalpaca")().load(alpaca)

    # Seal-Tools: a repeated record id, and a repeated API in tool.jsonl.
    seal = tmp_path / "seal"
    seal.mkdir()
    records = _head(data_dir / "seal-tools/test_in_domain.jsonl", 2)
    used = {c["api"] for r in records for c in r["calling"]}
    specs = [t for t in _head(data_dir / "seal-tools/tool.jsonl", 10**6) if t["api_name"] in used]
    _write_lines(seal / "tool.jsonl", specs)
    _write_lines(seal / "test_in_domain.jsonl", [records[0], records[1], records[0]])
    with pytest.raises(
        DatasetError, match=r"test_in_domain.jsonl, line 3, field 'id': duplicate id .*also on line 1"
    ):
        BENCHMARKS.get("seal-tools")().load(seal, split="in_domain")
    _write_lines(seal / "tool.jsonl", [*specs, specs[0]])
    with pytest.raises(
        DatasetError, match=rf"tool.jsonl, line {len(specs) + 1}, field 'api_name': duplicate id"
    ):
        BENCHMARKS.get("seal-tools")().load(seal, split="in_domain")

    # API-Bank: one API described twice.
    bank = tmp_path / "api-bank"
    (bank / "level-1-given-desc").mkdir(parents=True)
    dialogue = data_dir / "api-bank/level-1-given-desc/AddAgenda-level-1-1.jsonl"
    (bank / "level-1-given-desc" / dialogue.name).write_text(
        dialogue.read_text(encoding="utf-8"), encoding="utf-8"
    )
    specs = json.loads((data_dir / "api-bank/api_descriptions.json").read_text(encoding="utf-8"))[:3]
    (bank / "api_descriptions.json").write_text(json.dumps([*specs, specs[0]], indent=1), encoding="utf-8")
    lines = (bank / "api_descriptions.json").read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line == " {"]
    with pytest.raises(
        DatasetError, match=rf"line {starts[3]}, field '\[3\].name': duplicate id .*also on line {starts[0]}"
    ):
        BENCHMARKS.get("api-bank")().load(bank)


@pytest.mark.parametrize(
    ("field", "wrong", "expected"),
    [
        (
            ("error_type",),
            ["tool_select_error"],
            r"field 'int_select_01.error_type': expected the error type",
        ),
        (
            ("ground_truth", "args"),
            5,
            r"field 'int_select_01.ground_truth.args': expected an object or a string",
        ),
        (
            ("ground_truth", "args"),
            None,
            r"field 'int_select_01.ground_truth.args': expected an object or a string",
        ),
    ],
)
def test_critictool_types_that_used_to_load(
    tmp_path: Path, field: tuple[str, ...], wrong: Any, expected: str
) -> None:
    # Accepted before, they broke scoring later (a list error_type as a category key, a number
    # as the gold call's arguments).
    load_builtin_benchmarks()
    for part in ("internal_error", "external_error"):
        (tmp_path / part).mkdir()
        doc = json.loads((CRITICTOOL_FIXTURES / part / "base_data_wo_cot.json").read_text(encoding="utf-8"))
        if part == "internal_error":
            _set(doc["int_select_01"], field, wrong)
        (tmp_path / part / "base_data_wo_cot.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"base_data_wo_cot.json, line 2, {expected}"):
        BENCHMARKS.get("critictool")().load(tmp_path)
