"""toolmend: measure, catch, recover from and train away LLM tool-call errors.

Catch a bad call before it runs:

>>> import toolmend
>>> tools = toolmend.load_tools([{"name": "get_weather", "parameters": {"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
>>> parsed = toolmend.parse_calls('[get_wether(City="Paris")]')
>>> [f.code for f in toolmend.check_calls(parsed.calls, tools)]
['wrong_tool_name']
>>> fixed = toolmend.repair(parsed.calls, tools)
>>> fixed.calls[0].name, fixed.calls[0].arguments, fixed.clean
('get_weather', {'city': 'Paris'}, True)

The data model, the checker and the formats load eagerly; the heavier parts load on first use
of one of their names (``dir(toolmend)`` and ``help(toolmend)`` list them too):

- running benchmarks: ``run_bench``, ``BenchResult``, ``BENCHMARKS``, ``Benchmark``,
  ``SampleScore``, ``score_predictions``;
- models: ``get_model``, ``Model``, ``Completion``, ``GenerateConfig``;
- runs and reports: ``RunDir``, ``load_run``, ``runs_dataframe``, ``write_report``;
- the tool world and its environment: ``World``, ``generate_tasks``, ``Environment``,
  ``FaultPlan``, ``FaultRule``;
- error injection: ``inject``, ``Injection``.

``toolmend.check`` is the checker's subpackage; its ``check`` function is ``toolmend.check_calls``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolmend._errors import (
    ConfigError,
    DatasetError,
    MissingExtraError,
    ModelError,
    SpecError,
    ToolmendError,
)
from toolmend._schema import (
    ERROR_CODES,
    ErrorCode,
    Finding,
    Message,
    Ref,
    Sample,
    Tool,
    ToolCall,
    Trajectory,
)
from toolmend._version import __version__
from toolmend.check import Checker, Fix, RepairResult, bfcl_error_type, critictool_category, repair
from toolmend.check import check as check_calls
from toolmend.formats import CallFormat, ParseResult, load_tool, load_tools, parse_calls, write_calls

if TYPE_CHECKING:
    from toolmend._bench import BenchResult, run_bench
    from toolmend.benchmarks import BENCHMARKS, Benchmark, SampleScore, score_predictions
    from toolmend.env import Environment, FaultPlan, FaultRule
    from toolmend.models import Completion, GenerateConfig, Model, get_model
    from toolmend.reports import write_report
    from toolmend.runs import RunDir, load_run, runs_dataframe
    from toolmend.synth.inject import Injection, inject
    from toolmend.world import World, generate_tasks


# name -> module that defines it, imported on first access (PEP 562).
_LAZY = {
    "BENCHMARKS": "toolmend.benchmarks",
    "Benchmark": "toolmend.benchmarks",
    "SampleScore": "toolmend.benchmarks",
    "score_predictions": "toolmend.benchmarks",
    "BenchResult": "toolmend._bench",
    "run_bench": "toolmend._bench",
    "Completion": "toolmend.models",
    "GenerateConfig": "toolmend.models",
    "Model": "toolmend.models",
    "get_model": "toolmend.models",
    "RunDir": "toolmend.runs",
    "load_run": "toolmend.runs",
    "runs_dataframe": "toolmend.runs",
    "write_report": "toolmend.reports",
    "Environment": "toolmend.env",
    "FaultPlan": "toolmend.env",
    "FaultRule": "toolmend.env",
    "World": "toolmend.world",
    "generate_tasks": "toolmend.world",
    "Injection": "toolmend.synth.inject",
    "inject": "toolmend.synth.inject",
}


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolmend' has no attribute {name!r}")
    if module == "toolmend.models":
        # Model backends that live in higher layers register when their package is imported.
        importlib.import_module("toolmend.benchmarks")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BENCHMARKS",
    "ERROR_CODES",
    "BenchResult",
    "Benchmark",
    "CallFormat",
    "Checker",
    "Completion",
    "ConfigError",
    "DatasetError",
    "Environment",
    "ErrorCode",
    "FaultPlan",
    "FaultRule",
    "Finding",
    "Fix",
    "GenerateConfig",
    "Injection",
    "Message",
    "MissingExtraError",
    "Model",
    "ModelError",
    "ParseResult",
    "Ref",
    "RepairResult",
    "RunDir",
    "Sample",
    "SampleScore",
    "SpecError",
    "Tool",
    "ToolCall",
    "ToolmendError",
    "Trajectory",
    "World",
    "__version__",
    "bfcl_error_type",
    "check_calls",
    "critictool_category",
    "generate_tasks",
    "get_model",
    "inject",
    "load_run",
    "load_tool",
    "load_tools",
    "parse_calls",
    "repair",
    "run_bench",
    "runs_dataframe",
    "score_predictions",
    "write_calls",
    "write_report",
]
