"""toolmend: measure, catch, recover from and train away LLM tool-call errors.

>>> import toolmend
>>> tool = toolmend.Tool(name="add", parameters={"type": "object",
...     "properties": {"a": {"type": "integer"}}, "required": ["a"]})
>>> toolmend.ToolCall(name="add", arguments={"a": 1}).name
'add'
"""

from toolmend.errors import (
    ConfigError,
    DatasetError,
    MissingExtraError,
    ModelError,
    SpecError,
    ToolmendError,
)
from toolmend.schema import (
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

__version__ = "0.1.0"

__all__ = [
    "ERROR_CODES",
    "ConfigError",
    "DatasetError",
    "ErrorCode",
    "Finding",
    "Message",
    "MissingExtraError",
    "ModelError",
    "Ref",
    "Sample",
    "SpecError",
    "Tool",
    "ToolCall",
    "ToolmendError",
    "Trajectory",
    "__version__",
]
