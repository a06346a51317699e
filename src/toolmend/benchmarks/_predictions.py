"""Saved model outputs: one JSON line per sample, ``{"id": ..., "output": "<raw model text>"}``.

Multi-generation samples (CriticTool external errors, Repair@N) use ``"outputs": [...]``. Reading
never stops at a bad line: each problem is kept with its line number, so a report can say exactly
which lines were skipped and why.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "pred.jsonl"
>>> _ = p.write_text('{"id": "a", "output": "[f(x=1)]"}\\nnot json\\n')
>>> preds = read_predictions(p)
>>> preds.outputs, [str(x) for x in preds.problems]
({'a': '[f(x=1)]'}, ['line 2: not valid JSON (Expecting value)'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from toolmend._errors import DatasetError
from toolmend._jsontext import lines, loads, read_text
from toolmend.benchmarks._base import Prediction

__all__ = ["LineProblem", "Predictions", "read_predictions"]


@dataclass(frozen=True)
class LineProblem:
    """A line of a predictions file that could not be used."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class Predictions:
    """The usable predictions by sample id, and every line that was not usable."""

    path: Path
    outputs: dict[str, Prediction] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    """The line each id was read from (the last one, when an id repeats)."""
    problems: list[LineProblem] = field(default_factory=list)


def _output_of(record: dict[str, object]) -> tuple[Prediction | None, str | None]:
    """The prediction in ``record``, or why there is none."""
    if "outputs" in record:
        outs = record["outputs"]
        if isinstance(outs, list) and all(isinstance(o, str) for o in outs):
            return list(outs), None
        return None, "'outputs' must be a list of strings"
    if "output" in record:
        out = record["output"]
        if isinstance(out, str):
            return out, None
        if out is None:
            # null is what a failed generation leaves behind; it scores as an empty answer.
            return "", None
        return None, "'output' must be a string (the raw model text)"
    return None, "no 'output' or 'outputs' field"


def read_predictions(path: str | Path) -> Predictions:
    """Read a predictions JSONL file.

    Unusable lines are kept as :attr:`Predictions.problems`; a :class:`~toolmend.DatasetError`
    is raised when the file cannot be opened, holds no prediction, or more of its lines are
    unusable than usable (then it is most likely not a predictions file at all)."""
    p = Path(path)
    try:
        text = read_text(p)
    except OSError as exc:
        raise DatasetError(f"cannot read predictions: {exc.strerror or exc}", path=p) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"predictions file is not UTF-8 text ({exc.reason})", path=p) from exc
    preds = Predictions(path=p)
    for n, line in lines(text):
        try:
            record = loads(line)
        except json.JSONDecodeError as exc:
            preds.problems.append(LineProblem(n, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            preds.problems.append(LineProblem(n, f"expected a JSON object, got {type(record).__name__}"))
            continue
        sid = record.get("id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid:
            preds.problems.append(LineProblem(n, "missing 'id' (a string or an integer)"))
            continue
        out, why = _output_of(record)
        if out is None:
            preds.problems.append(LineProblem(n, f"id {sid!r}: {why}"))
            continue
        if sid in preds.outputs:
            preds.problems.append(
                LineProblem(n, f"id {sid!r} repeats line {preds.lines[sid]}; the later line is used")
            )
        preds.outputs[sid] = out
        preds.lines[sid] = n
    unusable = [q for q in preds.problems if "repeats line" not in q.reason]
    if not preds.outputs:
        detail = f"; {unusable[0]}" if unusable else ""
        raise DatasetError(f"no usable prediction in the file{detail}", path=p)
    if len(unusable) > len(preds.outputs):
        raise DatasetError(
            f"{len(unusable)} lines are unusable and only {len(preds.outputs)} usable; first: {unusable[0]}",
            path=p,
        )
    return preds
