"""``toolmend build sft|kto|refine|reflect|critique``: verified training data for TRL.

    toolmend build kto --source world --seed 0 --out data/kto.jsonl [--limit 50] [--max-tools 6]

Writes one JSON object per line in TRL's conversational format (``tools`` column included) and,
next to it, ``FILE.report.json`` (per-code balance, verification routes, dropped samples,
provenance); prints the balance table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from toolmend._errors import ToolmendError
from toolmend._jsontext import dumps
from toolmend.cli._console import console, fail

__all__ = ["register"]


def _command(kind: str):  # type: ignore[no-untyped-def]
    def build_kind(
        out: Annotated[Path, typer.Option("--out", help="JSON Lines file to write.")],
        source: Annotated[
            str, typer.Option(help="world, bfcl, nestools, or traces:DIR (toolmend serve --traces DIR).")
        ] = "world",
        seed: Annotated[int, typer.Option(help="Same seed, same file byte for byte.")] = 0,
        limit: Annotated[int | None, typer.Option(help="Use at most this many trajectories.")] = None,
        max_tools: Annotated[
            int | None, typer.Option(help="Offer the gold tools plus distractors up to this many.")
        ] = None,
        reply_format: Annotated[
            str, typer.Option(help="How calls are written: tags, json, python.")
        ] = "tags",
        data: Annotated[
            Path | None, typer.Option(help="Data folder for nestools/bfcl (default: shared).")
        ] = None,
        ground: Annotated[
            bool, typer.Option(help="refine: feedback also names values the conversation never mentions.")
        ] = False,
    ) -> None:
        from toolmend.train._data import build_rows

        try:
            rows, report = build_rows(
                kind, source=source, seed=seed, limit=limit, max_tools=max_tools,
                reply_format=reply_format, data=data, ground=ground,  # type: ignore[arg-type]
            )  # fmt: skip
        except ToolmendError as exc:
            fail(str(exc))
        if not rows:
            fail(f"no {kind} rows were built from {source!r}; dropped: {report.dropped or 'none'}")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(dumps(r) + "\n" for r in rows), encoding="utf-8")
        report_path = out.with_name(out.name + ".report.json")
        report_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        table = Table(
            title=f"{kind} data: {source}, seed {seed}, {report.traces} trajectories, {report.rows} rows"
        )
        table.add_column("part")
        table.add_column("kind")
        table.add_column("count", justify="right")
        for part, counts in (
            ("code", report.codes),
            ("turn", report.turns),
            ("verified by", report.verified_by),
            ("dropped", report.dropped),
        ):
            for name, n in counts.items():
                table.add_row(part, name, str(n))
        shown = console()
        shown.print(table)
        shown.print(f"wrote {out} and {report_path}")

    build_kind.__doc__ = f"Build {kind} training data (TRL conversational format, errors verified)."
    return build_kind


def register(build: typer.Typer) -> None:
    """Add ``sft``, ``kto``, ``refine``, ``reflect`` and ``critique`` to the ``build`` group."""
    for kind in ("sft", "kto", "refine", "reflect", "critique"):
        build.command(kind)(_command(kind))
