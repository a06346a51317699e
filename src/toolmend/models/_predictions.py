"""Saved model outputs: one JSON line per sample, ``{"id": ..., "output": "<raw model text>"}``.

Multi-generation samples (CriticTool external errors, Repair@N) use ``"outputs": [...]``. Reading
never stops at a bad line: each problem is kept with its line number, so a report can say exactly
which lines were skipped and why. ``toolmend score -p`` and the ``replay/`` backend both read through
:func:`read_predictions` (the replay backend ``strict``: a bad line is an error naming it).

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

__all__ = ["LineProblem", "Prediction", "Predictions", "read_predictions"]

Prediction = str | list[str]
"""A model's raw output for a sample; a list for multi-generation samples (CriticTool external
errors, Repair@N)."""


@dataclass(frozen=True)
class LineProblem:
    """A line of a predictions file that could not be used."""

    line: int
    reason: str
    field: str | None = None
    """The field the line is unusable for (``None``: the line as a whole)."""

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


def _output_of(record: dict[str, object]) -> tuple[Prediction | None, str, str]:
    """The prediction in ``record``, or why there is none and the field that says it."""
    if "outputs" in record:
        outs = record["outputs"]
        if isinstance(outs, list) and all(isinstance(o, str) for o in outs):
            return list(outs), "", "outputs"
        return None, "'outputs' must be a list of strings", "outputs"
    if "output" in record:
        out = record["output"]
        if isinstance(out, str):
            return out, "", "output"
        if out is None:
            # null is what a failed generation leaves behind; it scores as an empty answer.
            return "", "", "output"
        return None, "'output' must be a string (the raw model text)", "output"
    return None, "no 'output' or 'outputs' field", "output"


def read_predictions(path: str | Path, *, strict: bool = False) -> Predictions:
    """Read a predictions JSONL file.

    Unusable lines are kept as :attr:`Predictions.problems`; a :class:`~toolmend.DatasetError`
    is raised when the file cannot be opened, holds no prediction, or more of its lines are
    unusable than usable (then it is most likely not a predictions file at all). ``strict``: the
    first unusable line is a :class:`~toolmend.DatasetError` naming its line and field, and a file
    without a line is no error (what a replayed run finds missing is named per sample)."""
    p = Path(path)
    try:
        text = read_text(p)
    except OSError as exc:
        raise DatasetError(f"cannot read predictions: {exc.strerror or exc}", path=p) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"predictions file is not UTF-8 text ({exc.reason})", path=p) from exc
    preds = Predictions(path=p)

    def unusable(problem: LineProblem) -> None:
        if strict:
            raise DatasetError(problem.reason, path=p, line=problem.line, field=problem.field)
        preds.problems.append(problem)

    for n, line in lines(text):
        try:
            record = loads(line)
        except json.JSONDecodeError as exc:
            unusable(LineProblem(n, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            unusable(LineProblem(n, f"expected a JSON object, got {type(record).__name__}"))
            continue
        sid = record.get("id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid:
            unusable(LineProblem(n, "missing 'id' (a string or an integer)", "id"))
            continue
        out, why, where = _output_of(record)
        if out is None:
            unusable(LineProblem(n, f"id {sid!r}: {why}", where))
            continue
        if sid in preds.outputs:
            preds.problems.append(
                LineProblem(n, f"id {sid!r} repeats line {preds.lines[sid]}; the later line is used")
            )
        preds.outputs[sid] = out
        preds.lines[sid] = n
    if strict:
        return preds
    bad = [q for q in preds.problems if "repeats line" not in q.reason]
    if not preds.outputs:
        detail = f"; {bad[0]}" if bad else ""
        raise DatasetError(f"no usable prediction in the file{detail}", path=p)
    if len(bad) > len(preds.outputs):
        raise DatasetError(
            f"{len(bad)} lines are unusable and only {len(preds.outputs)} usable; first: {bad[0]}",
            path=p,
        )
    return preds
