"""`toolmend score` end to end with a small exact-match benchmark defined here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend._schema import Message, Sample
from toolmend.benchmarks import BENCHMARKS, Benchmark, Mode, Prediction, SampleScore
from toolmend.cli import app


class ExactBenchmark(Benchmark):
    """Scores 1 when the output equals the sample's stored answer."""

    name = "test-exact"

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        rows = json.loads(Path(str(path)).read_text())
        return [Sample(id=r["id"], metadata={"answer": r["answer"]}) for r in rows]

    def prompt(self, sample: Sample) -> list[Message]:
        return [Message(role="user", content="answer")]

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        out = prediction[-1] if isinstance(prediction, list) else prediction
        return SampleScore(id=sample.id, values={"accuracy": float(out == sample.metadata["answer"])})

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        vals = [s.values["accuracy"] or 0.0 for s in scores]
        return {"accuracy": 100 * sum(vals) / len(vals)}


if "test-exact" not in BENCHMARKS:
    BENCHMARKS.add("test-exact", ExactBenchmark)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data.json"
    data.write_text(
        json.dumps([{"id": "a", "answer": "x"}, {"id": "b", "answer": "y"}, {"id": "c", "answer": "z"}])
    )
    preds = tmp_path / "pred.jsonl"
    preds.write_text(
        "\n".join(
            [
                json.dumps({"id": "a", "output": "x"}),
                json.dumps({"id": "b", "outputs": ["q", "n"]}),
                "{broken",
                json.dumps({"id": "nope", "output": "x"}),
                json.dumps({"id": "c"}),
            ]
        )
    )
    return data, preds


def test_score_json_reports_coverage_and_problems(files: tuple[Path, Path]) -> None:
    data, preds = files
    result = CliRunner().invoke(app, ["score", "test-exact", "--data", str(data), "-p", str(preds), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["metrics"] == {"accuracy": 50.0}
    assert (out["scored"], out["total"]) == (2, 3)
    assert out["missing"] == ["c"]
    assert out["unknown"] == {"nope": 4}
    assert out["problems"] == [
        "line 3: not valid JSON (Expecting property name enclosed in double quotes)",
        "line 5: id 'c': no 'output' or 'outputs' field",
    ]


def test_missing_as_empty_counts_them_as_failures(files: tuple[Path, Path]) -> None:
    data, preds = files
    result = CliRunner().invoke(
        app, ["score", "test-exact", "--data", str(data), "-p", str(preds), "--json", "--missing-as-empty"]
    )
    out = json.loads(result.stdout)
    assert out["scored"] == 3
    assert out["metrics"]["accuracy"] == pytest.approx(100 / 3)


def test_table_output_names_lines(files: tuple[Path, Path]) -> None:
    data, preds = files
    result = CliRunner().invoke(app, ["score", "test-exact", "--data", str(data), "-p", str(preds)])
    assert result.exit_code == 0
    assert "scored 2 of 3 samples" in result.stdout
    assert "line 4: unknown id 'nope'" in result.stdout


def test_bad_inputs_exit_2_with_a_message(tmp_path: Path, files: tuple[Path, Path]) -> None:
    data, _ = files
    missing = tmp_path / "absent.jsonl"
    result = CliRunner().invoke(app, ["score", "test-exact", "--data", str(data), "-p", str(missing)])
    assert result.exit_code == 2
    assert "absent.jsonl" in result.stderr and "cannot read predictions" in result.stderr
    result = CliRunner().invoke(app, ["score", "no-such-bench", "-p", str(missing)])
    assert result.exit_code == 2
    assert "unknown benchmark 'no-such-bench'" in result.stderr
    result = CliRunner().invoke(
        app, ["score", "test-exact", "--data", str(data), "-p", str(missing), "--mode", "x"]
    )
    assert result.exit_code == 2
