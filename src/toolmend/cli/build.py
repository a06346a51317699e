"""``toolmend build critic``: write a CriticTool-style critique suite from gold trajectories.

    toolmend build critic --source world --seed 0 --out suites/critic-0 [--limit 50]

Prints the number of samples per internal error type and per external fault kind; the files
load with the CriticTool benchmark (``toolmend score`` / ``toolmend bench``) unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from toolmend.cli import build_data
from toolmend.cli._console import console, fail
from toolmend.errors import ToolmendError

__all__ = ["register"]


def critic(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the suite into.")],
    source: Annotated[str, typer.Option(help="Gold trajectories: world, nestools or bfcl.")] = "world",
    seed: Annotated[int, typer.Option(help="Same seed, same files byte for byte.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use at most this many trajectories.")] = None,
    data: Annotated[
        Path | None, typer.Option(help="Data folder for nestools/bfcl (default: shared).")
    ] = None,
) -> None:
    """Build a critique suite (internal and external errors) in CriticTool's format."""
    from toolmend.benchmarks.critic import build_suite

    try:  # build_suite names the sources it knows
        info = build_suite(source, seed=seed, out=out, limit=limit, data=data)
    except ToolmendError as exc:
        fail(str(exc))
    table = Table(title=f"critique suite: {source}, seed {seed}, {info.traces} trajectories")
    table.add_column("part")
    table.add_column("kind")
    table.add_column("samples", justify="right")
    for kind, count in info.internal.items():
        table.add_row("internal", kind, str(count))
    for kind, count in info.external.items():
        table.add_row("external", kind, str(count))
    for reason, count in info.skipped.items():
        table.add_row("skipped", reason, str(count))
    out_console = console()
    out_console.print(table)
    out_console.print(f"wrote {len(info.files)} files under {info.root}")


def register(app: typer.Typer) -> None:
    """Add the ``build`` command group (with ``critic``) to ``app``."""
    build = typer.Typer(help="Build datasets and suites.", no_args_is_help=True)
    build.command("critic")(critic)
    build_data.register(build)
    app.add_typer(build, name="build")
