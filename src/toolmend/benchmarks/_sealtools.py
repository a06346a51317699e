"""Seal-Tools test sets → Samples with gold calls; scored with HiTEC's F1s (``seal-tools``).

The folder holds ``test_in_domain.jsonl`` (700 records) and ``test_out_domain.jsonl`` (654),
plus ``tool.jsonl`` with every API they use. A record is ``{"id", "query", "calling": [{"api",
"parameters", "responses"}]}``; ``easy`` ids are single-call, ``difficult`` ones multi-call.
HiTEC's "Seal-Tools (Single-Tool)" (294 queries) is ``subset="single"``: the 200 + 94 easy
records. A sample offers the tools its gold calls use; exact ``"API_call_n"`` argument values
(nested calls) become :class:`~toolmend.Ref` and each call's ``responses`` its ``outputs``.

>>> bench = SealTools()
>>> samples = bench.load(subset="single")
>>> len(samples)
294
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from toolmend._errors import ConfigError, DatasetError, SpecError
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._base import BENCHMARKS
from toolmend.benchmarks._hitec import CallListBenchmark, revive_placeholders
from toolmend.benchmarks._io import UniqueIds, check_flat_spec, need, read_jsonl
from toolmend.formats._tools import load_tool

__all__ = ["SealTools", "load_seal_tools", "load_seal_tools_specs"]

Split = Literal["all", "in_domain", "out_domain"]
Subset = Literal["all", "single", "multiple"]
_FILES = {"in_domain": "test_in_domain.jsonl", "out_domain": "test_out_domain.jsonl"}


def load_seal_tools_specs(path: str | Path) -> dict[str, Tool]:
    """``tool.jsonl`` → tools by name (NesTools-style specs: ``api_name``, flat ``parameters``)."""
    p = Path(path)
    tools: dict[str, Tool] = {}
    unique = UniqueIds(p, "api_name")
    for n, spec in read_jsonl(p, objects=True):
        check_flat_spec(spec, path=p, line=n)
        try:
            tool = load_tool(spec, dialect="nestools")
        except SpecError as exc:
            raise DatasetError(str(exc), path=p, line=n, field="api_name") from exc
        unique.add(tool.name, n)
        tools[tool.name] = tool
    return tools


def _record(row: dict[str, Any], tools: dict[str, Tool], path: Path, line: int) -> Sample:
    for key in ("id", "query"):
        need(row.get(key), str, "a string", path=path, line=line, field=key)
    calling = row.get("calling")
    if not isinstance(calling, list) or not calling:
        raise DatasetError("expected a non-empty list of gold calls", path=path, line=line, field="calling")
    target: list[ToolCall] = []
    for i, call in enumerate(calling):
        if not isinstance(call, dict) or not isinstance(call.get("api"), str):
            raise DatasetError(
                "expected {'api': str, 'parameters': {...}}", path=path, line=line, field=f"calling[{i}]"
            )
        params = call.get("parameters", {})
        need(params, dict, "an object", path=path, line=line, field=f"calling[{i}].parameters")
        responses = need(
            call.get("responses", []), list, "a list", path=path, line=line, field=f"calling[{i}].responses"
        )
        for j, out in enumerate(responses):
            need(out, str, "a placeholder string", path=path, line=line, field=f"calling[{i}].responses[{j}]")
        spec = tools.get(call["api"])
        outputs = list(responses)
        fields = list(spec.returns.get("properties", {})) if spec and spec.returns else []
        target.append(
            ToolCall(
                name=call["api"],
                arguments=revive_placeholders(params),
                outputs=outputs,
                output_fields=fields[: len(outputs)] if len(fields) >= len(outputs) else [],
            )
        )
    used = list(dict.fromkeys(c.name for c in target))
    missing = [name for name in used if name not in tools]
    if missing:
        raise DatasetError(
            f"APIs not in tool.jsonl: {', '.join(missing)}", path=path, line=line, field="calling"
        )
    return Sample(
        id=row["id"],
        messages=[Message(role="user", content=row["query"])],
        tools=[tools[name] for name in used],
        target=target,
        metadata={"difficulty": "easy" if "-easy-" in row["id"] else "difficult", "source": path.name},
    )


def load_seal_tools(folder: str | Path, split: Split = "all", subset: Subset = "all") -> list[Sample]:
    """Read the Seal-Tools test split(s) from ``folder`` (which also holds ``tool.jsonl``)."""
    root = Path(folder)
    if split not in ("all", *_FILES):
        raise ConfigError(f"unknown Seal-Tools split {split!r} (all, in_domain, out_domain)")
    tools = load_seal_tools_specs(root / "tool.jsonl")
    names = list(_FILES) if split == "all" else [split]
    samples: list[Sample] = []
    for name in names:
        path = root / _FILES[name]
        unique = UniqueIds(path)
        for line, row in read_jsonl(path, objects=True):
            sample = _record(row, tools, path, line)
            unique.add(sample.id, line)
            multi = len(sample.target) > 1 or sample.metadata["difficulty"] == "difficult"
            if subset == "all" or (subset == "multiple") == multi:
                samples.append(sample)
    return samples


@BENCHMARKS.register("seal-tools")
class SealTools(CallListBenchmark):
    """Seal-Tools, scored with HiTEC's F1 Name / F1 Name + Parameter (plus ToolACE-R accuracy/overlap)."""

    load_options = ("split", "subset")
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "seal-tools"
    default_data = "data/seal-tools"

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Options: ``split`` (all | in_domain | out_domain), ``subset`` (all | single | multiple)."""
        self.check_load_options(options)
        return load_seal_tools(
            self._data_path(path), options.get("split", "all"), options.get("subset", "all")
        )
