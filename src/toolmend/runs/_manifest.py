"""``manifest.json``: what a run was, written before its first sample.

It freezes what is needed to reproduce or resume the run — the command line, the config (both
with secrets redacted, see :mod:`toolmend.runs._redact`), the
toolmend version, the git revision of the working tree (if any) and a content hash of the
dataset, so that resuming against changed data is refused instead of mixing two datasets.

>>> Manifest(benchmark="my-benchmark", model="openai/gpt-4o-mini").benchmark
'my-benchmark'
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolmend._version import __version__
from toolmend.runs._redact import redact, redact_argv

__all__ = ["DatasetInfo", "Manifest", "dataset_fingerprint", "git_revision"]


def dataset_fingerprint(path: str | Path) -> str:
    """SHA-256 over a file's bytes, or over every file of a folder (relative names and bytes, sorted)."""
    root = Path(path)
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for p in files:
        if root.is_dir():
            h.update(p.relative_to(root).as_posix().encode("utf-8") + b"\0")
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def git_revision(cwd: str | Path | None = None) -> str | None:
    """The current commit (suffixed ``-dirty`` with uncommitted changes), or ``None`` outside git."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{rev}-dirty" if dirty else rev


class DatasetInfo(BaseModel):
    """Where the samples came from and a hash of their content."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> DatasetInfo:
        return cls(path=str(path), sha256=dataset_fingerprint(path))


class Manifest(BaseModel):
    """The contents of ``manifest.json``."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    model: str
    created: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    command: list[str] = Field(default_factory=lambda: list(sys.argv), validate_default=True)
    config: dict[str, Any] = Field(default_factory=dict)
    toolmend_version: str = __version__
    python: str = Field(default_factory=lambda: sys.version.split()[0])
    git_revision: str | None = Field(default_factory=lambda: git_revision(Path(__file__).resolve().parent))
    """The revision of the toolmend checkout that ran (``None`` for an installed wheel)."""
    dataset: DatasetInfo | None = None
    strategy: str | None = None
    """The inference-time strategies (``a+b``), ``None`` for none; part of the directory name."""
    headline: str | None = None
    """The benchmark's headline per-sample score (reports rank and break down by it)."""
    detail_keys: list[str] = Field(default_factory=list)
    """The per-sample detail keys reports break results down by."""
    n_planned: int | None = None
    """How many samples the run was asked to answer (so that an unfinished run reads "k of n")."""

    # Secrets (API keys, tokens, auth headers, URL credentials) never reach manifest.json: the
    # command line and the settings are redacted as the manifest is built, hence before writing.
    @field_validator("command")
    @classmethod
    def _redact_command(cls, value: list[str]) -> list[str]:
        return redact_argv(value)

    @field_validator("config")
    @classmethod
    def _redact_config(cls, value: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = redact(value)
        return out
