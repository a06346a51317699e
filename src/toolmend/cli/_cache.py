"""``toolmend cache stats|clear``: inspect and empty the response cache.

The cache lives in ``--cache-dir``, else ``$TOOLMEND_CACHE_DIR``, else ``~/.cache/toolmend``.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from toolmend.cli._console import console
from toolmend.models._cache import ResponseCache

__all__ = ["register"]

_DIR = typer.Option(
    None, "--cache-dir", help="Cache folder (default: $TOOLMEND_CACHE_DIR or ~/.cache/toolmend)."
)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to ``app``."""
    group = typer.Typer(help="Inspect or clear the model response cache.", no_args_is_help=True)

    @group.command("stats")
    def stats(cache_dir: Path | None = _DIR) -> None:
        """Where the cache is, how many answers it holds, and for which models."""
        info = ResponseCache(cache_dir).stats()
        out = console()
        out.print(f"cache: {info.path}")
        out.print(f"entries: {info.entries}  size: {_size(info.size_bytes)}")
        if info.models:
            table = Table("model", "entries")
            for model, n in info.models.items():
                table.add_row(model, str(n))
            out.print(table)

    @group.command("clear")
    def clear(
        cache_dir: Path | None = _DIR,
        model: str | None = typer.Option(
            None, "--model", help="Only this model's answers (e.g. openai/gpt-4o-mini)."
        ),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    ) -> None:
        """Delete cached answers (all, or one model's)."""
        cache = ResponseCache(cache_dir)
        what = f"the cached answers of {model}" if model else "every cached answer"
        if not yes and not typer.confirm(f"Delete {what} in {cache.path}?"):
            raise typer.Exit(1)
        deleted = cache.clear(model)
        console().print(f"deleted {deleted} entries")

    app.add_typer(group, name="cache")
