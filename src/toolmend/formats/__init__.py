"""Wire formats in and out: tool specs (:mod:`.tools`) and tool calls in every format.

>>> from toolmend.formats import parse_calls, write_calls
>>> r = parse_calls('Sure: [get_weather(city="Paris")]')
>>> r.calls[0].arguments, [f.code for f in r.findings]
({'city': 'Paris'}, ['redundant_information'])
>>> write_calls(r.calls, "tags")
'<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris"}}\\n</tool_call>'
"""

from toolmend.formats._calls import parse_calls, write_calls
from toolmend.formats._jsonfmt import parse_json_calls, write_json_calls
from toolmend.formats._lenient import load_lenient
from toolmend.formats._nestools import calls_from_nestools, parse_nestools_calls, write_nestools_calls
from toolmend.formats._openai import (
    parse_openai_message,
    parse_openai_tool_calls,
    to_openai_tool_calls,
    write_openai_message,
)
from toolmend.formats._python_calls import format_python_value, parse_python_calls, write_python_calls
from toolmend.formats._result import CallFormat, ParseResult
from toolmend.formats._tags import parse_tagged_calls, strip_think, write_tagged_calls
from toolmend.formats._tools import detect_dialect, load_tool, load_tools, to_openai_tool

__all__ = [
    "CallFormat",
    "ParseResult",
    "calls_from_nestools",
    "detect_dialect",
    "format_python_value",
    "load_lenient",
    "load_tool",
    "load_tools",
    "parse_calls",
    "parse_json_calls",
    "parse_nestools_calls",
    "parse_openai_message",
    "parse_openai_tool_calls",
    "parse_python_calls",
    "parse_tagged_calls",
    "strip_think",
    "to_openai_tool",
    "to_openai_tool_calls",
    "write_calls",
    "write_json_calls",
    "write_nestools_calls",
    "write_openai_message",
    "write_python_calls",
    "write_tagged_calls",
]
