"""Tool execution: a registry of Python tools, cache → execute → simulate, fault injection.

>>> from toolmend.env import Environment, ToolRegistry
>>> tools = ToolRegistry()
>>> @tools.tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> Environment(tools, checker=None).execute(ToolCall(name="add", arguments={"a": 2, "b": 3})).data
5
"""

from toolmend.env.cache import ToolCache, call_key
from toolmend.env.environment import Environment, Simulator, extract_path
from toolmend.env.faults import FAULT_KINDS, FaultKind, FaultPlan, FaultRule, fault_response
from toolmend.env.registry import RegisteredTool, ToolRegistry, schema_from_function
from toolmend.env.response import ResponseSource, ToolFailed, ToolFailure, ToolResponse, error_body
from toolmend.env.simulator import synthesize
from toolmend.env.validate import BLOCKING_CODES, CheckFn, schema_findings
from toolmend.schema import ToolCall

__all__ = [
    "BLOCKING_CODES",
    "FAULT_KINDS",
    "CheckFn",
    "Environment",
    "FaultKind",
    "FaultPlan",
    "FaultRule",
    "RegisteredTool",
    "ToolCache",
    "ResponseSource",
    "Simulator",
    "ToolCall",
    "ToolFailed",
    "ToolFailure",
    "ToolRegistry",
    "ToolResponse",
    "call_key",
    "error_body",
    "extract_path",
    "fault_response",
    "schema_findings",
    "schema_from_function",
    "synthesize",
]
