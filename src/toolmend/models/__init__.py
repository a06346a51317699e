"""Model backends behind one async interface, with a response cache, bounded concurrency and
transport retries.

>>> from toolmend.models import get_model
>>> model = get_model("scripted", script=lambda messages: "ok")
>>> model.name
'scripted'

See :mod:`toolmend.models._base` for the interface, :mod:`toolmend.models._providers` for the model
strings, :mod:`toolmend.models._cache` for the cache and :mod:`toolmend._http` for transport retries.
"""

from typing import TYPE_CHECKING, Any

from toolmend._http import HTTPStatusError, RetryPolicy
from toolmend.models._base import (
    Completion,
    GenerateConfig,
    GenerateRequest,
    Model,
    RawToolCall,
    ToolChoice,
    ToolMode,
    Usage,
)
from toolmend.models._cache import CacheStats, ResponseCache, cache_key, default_cache_dir
from toolmend.models._fakes import ReplayModel, ScriptedModel
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT
from toolmend.models._providers import MODELS, get_model, resolve_cache
from toolmend.models._tool_names import ToolNameMap

if TYPE_CHECKING:
    from toolmend.models._openai import OpenAIModel

__all__ = [
    "DEFAULT_TOOL_PROMPT",
    "MODELS",
    "CacheStats",
    "Completion",
    "GenerateConfig",
    "GenerateRequest",
    "HTTPStatusError",
    "Model",
    "OpenAIModel",
    "RawToolCall",
    "ReplayModel",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedModel",
    "ToolChoice",
    "ToolMode",
    "ToolNameMap",
    "Usage",
    "cache_key",
    "default_cache_dir",
    "get_model",
    "resolve_cache",
]


def __getattr__(name: str) -> Any:
    # OpenAIModel is imported on first use: it brings aiohttp (~0.4 s to import), which a run
    # that makes no HTTP request (a local model, the checklist critic) does not need.
    if name == "OpenAIModel":
        from toolmend.models._openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
