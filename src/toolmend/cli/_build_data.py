"""``toolmend build sft|kto|refine|reflect|critique``: verified training data for TRL; ``build
rl|sft|kto --format verl``: the same world data for verl's multi-turn agent loop.

    toolmend build kto --source world --seed 0 --out data/kto.jsonl [--limit 50] [--max-tools 6]
    toolmend build rl --format verl --out data/verl-rl [--seed 0] [--limit 100] [--max-tools 8]

Writes one JSON object per line in TRL's conversational format (``tools`` column included) and,
next to it, ``FILE.report.json`` (per-code balance, verification routes, dropped samples,
provenance); prints the balance table. With ``--format verl``, ``--out`` is a folder that gets
``train.parquet``, ``tools.yaml`` and ``export.json`` (:mod:`toolmend.integrations.verl`), and the
verl options that read them are printed.
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
        out_format: Annotated[
            str,
            typer.Option(
                "--format",
                help="trl (JSON Lines) or, for sft and kto, verl (a folder: parquet + tools YAML).",
            ),
        ] = "trl",
    ) -> None:
        from toolmend.train._data import build_rows

        if out_format == "verl":
            if kind not in ("sft", "kto"):
                fail(f"--format verl builds rl, sft and kto data, not {kind}")
            _verl(kind, out, source, seed, limit, max_tools)
            return
        if out_format != "trl":
            fail(f"--format must be trl or verl, got {out_format!r}")

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


def _verl(kind: str, out: Path, source: str, seed: int, limit: int | None, max_tools: int | None) -> None:
    from toolmend.integrations.verl import export_verl

    if source != "world":
        fail(
            f"--format verl needs --source world (verl's tool loop runs the calls in toolmend's world), not {source!r}"
        )
    if limit is not None and limit < 1:
        fail(f"--limit must be 1 or more, got {limit}")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: with --format verl it is a folder, and a file of that name exists")
    try:
        info = export_verl(kind, out, seed=seed, limit=limit, max_tools=max_tools)
    except ToolmendError as exc:
        fail(str(exc))
    shown = console()
    shown.print(f"{kind} data for verl: world seed {seed}, {info.tasks} tasks, {info.rows} rows")
    shown.print(f"wrote {', '.join(info.files)} and {out / 'export.json'}")
    shown.print("verl options: " + " ".join(info.options), markup=False, highlight=False, soft_wrap=True)


def rl(
    out: Annotated[Path, typer.Option("--out", help="Folder to write train.parquet and tools.yaml into.")],
    out_format: Annotated[str, typer.Option("--format", help="verl (the one format of rl rows).")] = "verl",
    seed: Annotated[int, typer.Option(help="The world's seed: same seed, same files.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use at most this many world tasks.")] = None,
    max_tools: Annotated[
        int | None, typer.Option(help="Offer each task its gold tools plus distractors up to this many.")
    ] = None,
) -> None:
    """Build RL prompts (world tasks) for verl's multi-turn agent loop."""
    if out_format != "verl":
        fail(f"rl rows are written for verl: --format verl (got {out_format!r})")
    _verl("rl", out, "world", seed, limit, max_tools)


def register(build: typer.Typer) -> None:
    """Add ``sft``, ``kto``, ``refine``, ``reflect``, ``critique`` and ``rl`` to the ``build`` group."""
    for kind in ("sft", "kto", "refine", "reflect", "critique"):
        build.command(kind)(_command(kind))
    build.command("rl")(rl)
