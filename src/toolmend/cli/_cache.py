"""``toolmend cache stats|clear``: inspect and empty the cache folder (responses, embeddings, suites).

The cache lives in ``--cache-dir``, else ``$TOOLMEND_CACHE_DIR``, else ``~/.cache/toolmend``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from rich.table import Table

from toolmend._errors import ToolmendError
from toolmend.cli._console import console, fail
from toolmend.models._cache import ResponseCache, default_cache_dir

__all__ = ["register"]

# toolmend.compare._embed.DEFAULT_CACHE_FILE, not imported: that module loads numpy (seconds).
_EMBEDDINGS = "embeddings.sqlite"

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


def _folder(cache_dir: Path | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()


def _parts(root: Path) -> dict[str, list[Path]]:
    """What the cache folder holds besides the responses: embeddings and built suites."""
    return {
        "embeddings": sorted(root.glob(_EMBEDDINGS + "*")),
        "suites": [root / "suites"] if (root / "suites").exists() else [],
    }


def _bytes(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        total += sum(f.stat().st_size for f in files)
    return total


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to ``app``."""
    group = typer.Typer(help="Inspect or clear toolmend's cache folder.", no_args_is_help=True)

    @group.command("stats")
    def stats(cache_dir: Path | None = _DIR) -> None:
        """Where the cache is: cached answers (per model), embeddings and built suites."""
        root = _folder(cache_dir)
        if root.exists() and not root.is_dir():
            fail(f"the cache folder {root} is not a directory")
        try:
            info = ResponseCache(root, recover=False).stats()
        except ToolmendError as exc:
            fail(str(exc))
        out = console()
        out.print(f"cache: {root}")
        out.print(f"responses: {info.path}")
        out.print(f"entries: {info.entries}  size: {_size(info.size_bytes)}")
        for name, paths in _parts(root).items():
            out.print(f"{name}: {_size(_bytes(paths))}" + (f" ({paths[0]})" if paths else ""))
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
        """Delete cached answers (all, or one model's); without --model also embeddings and suites."""
        root = _folder(cache_dir)
        if root.exists() and not root.is_dir():
            fail(f"the cache folder {root} is not a directory")
        cache = ResponseCache(root, recover=False)
        what = (
            f"the cached answers of {model}"
            if model
            else f"every cached answer, embedding and suite in {root}"
        )
        if not yes and not typer.confirm(f"Delete {what}?"):
            raise typer.Exit(1)
        try:
            deleted = cache.clear(model)
        except ToolmendError as exc:
            fail(str(exc))
        console().print(f"deleted {deleted} entries")
        if model is None:
            for name, paths in _parts(root).items():
                for p in paths:
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink(missing_ok=True)
                if paths:
                    console().print(f"deleted the {name}")

    app.add_typer(group, name="cache")
