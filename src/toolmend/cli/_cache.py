"""``toolmend cache stats|clear``: inspect and empty the cache folder: every namespace of
:mod:`toolmend._kvcache` (responses, embeddings, checklists) and the built suites.

The cache lives in ``--cache-dir``, else ``$TOOLMEND_CACHE_DIR``, else ``~/.cache/toolmend``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from rich.table import Table

from toolmend._errors import ToolmendError
from toolmend._kvcache import FILES, KVCache, NamespaceStats
from toolmend.cli._console import console, fail
from toolmend.models._cache import ResponseCache, default_cache_dir

__all__ = ["register"]

_EMBEDDINGS = FILES["embeddings"]
_OTHERS = [name for name in FILES if name != "responses"]
"""The namespaces besides the responses, each in its file (``responses`` has its own lines)."""

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


def _namespace(root: Path, name: str) -> tuple[Path, NamespaceStats | None, str]:
    """The file of namespace ``name``, its stats (``None`` when absent or unreadable) and why not."""
    path = root / FILES[name]
    if not path.exists():
        return path, None, ""
    try:
        return path, KVCache(path, recover=False).stats().get(name, NamespaceStats()), ""
    except ToolmendError as exc:
        return path, None, str(exc)


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
        """Where the cache is: cached answers, embeddings and checklists (per model), built suites."""
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
        per_model: dict[str, dict[str, int]] = {name: {} for name in FILES}
        per_model["responses"] = dict(info.models)
        for name in _OTHERS:
            path, found, why = _namespace(root, name)
            files = sorted(root.glob(FILES[name] + "*"))
            size = _size(_bytes(files))
            if found is not None:
                out.print(f"{name}: {size}, {found.entries} entries ({path})")
                per_model[name] = dict(found.models)
            elif why:
                out.print(f"{name}: {size} ({path} cannot be read: {why})")
            else:
                out.print(f"{name}: {size}")
        suites = root / "suites"
        out.print(
            f"suites: {_size(_bytes([suites] if suites.exists() else []))}"
            + (f" ({suites})" if suites.exists() else "")
        )
        models = sorted({m for counts in per_model.values() for m in counts})
        if models:
            table = Table("model", *FILES)
            for model in models:
                table.add_row(model, *(str(per_model[name].get(model, 0)) for name in FILES))
            out.print(table)

    @group.command("clear")
    def clear(
        cache_dir: Path | None = _DIR,
        model: str | None = typer.Option(
            None, "--model", help="Only this model's entries (e.g. openai/gpt-4o-mini), in every namespace."
        ),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    ) -> None:
        """Delete cached entries (all, or one model's in every namespace); without --model also the suites."""
        root = _folder(cache_dir)
        if root.exists() and not root.is_dir():
            fail(f"the cache folder {root} is not a directory")
        cache = ResponseCache(root, recover=False)
        what = (
            f"the cached entries of {model}"
            if model
            else f"every cached answer, embedding, checklist and suite in {root}"
        )
        if not yes and not typer.confirm(f"Delete {what}?"):
            raise typer.Exit(1)
        try:
            deleted = cache.clear(model)
            for name in _OTHERS:
                path = root / FILES[name]
                if model is not None and path.exists():
                    deleted += KVCache(path, recover=False).clear(name, model=model)
                elif model is None:
                    deleted += KVCache(path, recover=False).clear()
        except ToolmendError as exc:
            fail(str(exc))
        console().print(f"deleted {deleted} entries")
        if model is None:
            # Files set aside as corrupt go too, and the built suites.
            for p in [p for name in FILES for p in root.glob(FILES[name] + "*")]:
                p.unlink(missing_ok=True)
            suites = root / "suites"
            if suites.is_symlink() or suites.is_file():
                suites.unlink()
                console().print("deleted the suites")
            elif suites.exists():
                shutil.rmtree(suites)
                console().print("deleted the suites")

    app.add_typer(group, name="cache")
