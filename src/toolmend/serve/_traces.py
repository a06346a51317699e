"""Traces of proxied exchanges: ``DIR/manifest.json`` and ``DIR/traces.jsonl``, one line per
exchange, appended and flushed as each answer is sent.

Each line holds the request (never its headers, so no key is written), the raw upstream answer,
the guard's decisions, the final answer, and the fields the rest of toolmend reads:

- ``id`` and ``output`` — ``toolmend score BENCH -p DIR/traces.jsonl`` scores the final answers
  (``output`` is the final assistant message as OpenAI JSON; ``id`` is the client's
  ``x-toolmend-sample-id`` header, else a fresh one);
- ``examples`` — training data: the final answer is ``desirable`` when it was accepted, repaired
  or recovered; an original that needed changes is ``undesirable``; ``sft_target`` is the
  repaired or recovered answer.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import IO, Any

from toolmend._errors import ConfigError
from toolmend._jsontext import dumps
from toolmend._version import __version__

__all__ = ["TraceWriter", "trace_record"]


class TraceWriter:
    """Appends trace lines to ``DIR/traces.jsonl`` (created with its manifest when missing)."""

    def __init__(self, directory: str | Path, **manifest: Any) -> None:
        self.dir = Path(directory)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            manifest_path = self.dir / "manifest.json"
            if not manifest_path.exists():
                info = {"kind": "serve", "toolmend": __version__, "created": _now(), **manifest}
                with _private(manifest_path, os.O_TRUNC) as f:
                    f.write(dumps(info, indent=2, default=str) + "\n")
            self.path = self.dir / "traces.jsonl"
            self._file: IO[str] | None = _private(self.path, os.O_APPEND)
        except OSError as exc:
            raise ConfigError(f"--traces {directory}: cannot write there ({exc.strerror or exc})") from exc
        self.count = 0

    def write(self, record: dict[str, Any]) -> None:
        """Append one exchange."""
        if self._file is None:
            return
        self._file.write(dumps(record, default=str) + "\n")
        self._file.flush()
        self.count += 1

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def _private(path: Path, mode: int) -> IO[str]:
    """``path`` opened for writing, readable by its owner only: traces hold whole conversations."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode, 0o600)
    os.fchmod(fd, 0o600)  # a file made before, under a looser umask
    return os.fdopen(fd, "w", encoding="utf-8")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def trace_record(
    *,
    sample_id: str,
    request: dict[str, Any],
    upstream: Any,
    original: dict[str, Any] | None,
    final: dict[str, Any] | None,
    outcome: str,
    status: int,
    verdict: dict[str, Any],
    stream: bool,
    seconds: float,
) -> dict[str, Any]:
    """One trace line (see the module docstring)."""
    examples = []
    if final is not None and outcome in ("accepted", "repaired", "recovered", "passthrough", "cut"):
        examples.append({"label": "desirable", "message": final})
    if original is not None and outcome in (
        "repaired",
        "recovered",
        "aborted",
        "rejected",
        "failed_to_model",
    ):
        examples.append({"label": "undesirable", "message": original})
    return {
        "id": sample_id,
        "time": _now(),
        "stream": stream,
        "status": status,
        "outcome": outcome,
        "output": dumps(final, default=str) if final is not None else None,
        "request": request,
        "upstream": upstream,
        "original": original,
        "final": final,
        "verdict": verdict,
        "examples": examples,
        "sft_target": final if outcome in ("repaired", "recovered") else None,
        "seconds": round(seconds, 6),
    }
