"""The checklist: deterministic checks of tool calls against tool schemas, and safe repair.

>>> from toolmend.check import check, repair
>>> from toolmend import ToolCall
>>> tools = [{"name": "get_weather", "parameters": {"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
>>> [f.code for f in check([ToolCall(name="get_wether", arguments={"City": "Oslo"})], tools)]
['wrong_tool_name']
>>> fixed = repair([ToolCall(name="get_wether", arguments={"City": "Oslo"})], tools)
>>> fixed.calls[0].name, fixed.calls[0].arguments, fixed.findings
('get_weather', {'city': 'Oslo'}, [])
"""

from toolmend.check._checker import Checker, check, format_path
from toolmend.check._codes import bfcl_error_type, critictool_category, describe
from toolmend.check._ground import ungrounded
from toolmend.check._repair import Fix, RepairResult, repair

__all__ = [
    "Checker",
    "Fix",
    "RepairResult",
    "bfcl_error_type",
    "check",
    "critictool_category",
    "describe",
    "format_path",
    "repair",
    "ungrounded",
]
