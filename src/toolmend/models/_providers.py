"""Model strings → backends: ``get_model("openai/gpt-4o-mini")``.

=====================  ===================================================================
``openai/<model>``     any OpenAI-compatible server (``base_url=``, ``api_key=`` or $OPENAI_API_KEY)
``hf/<path>``          transformers, in-process (extra ``hf``): a folder, a ``.gguf`` file or a named model
``local/<model>``      a GGUF file or named model (``smollm2-135m``, ``gemma3-270m``) in-process:
                       llama-cpp-python when installed (extra ``local``), else transformers
``vllm/<path>``        vLLM offline engine, in-process, GPU (extra ``vllm``)
``scripted``           replies from ``script=`` (a list, or a function of the messages)
``replay/<path>``      outputs saved in a ``{"id", "output"}`` JSONL file
``checklist``          the rule-based CriticTool critic (no LLM; CriticTool prompts only)
``noisy/<model>``      ``<model>`` with seeded, labelled mistakes (:mod:`toolmend.strategies._noisy`)
=====================  ===================================================================

``checklist`` and ``noisy`` live in higher layers, which register them when they are imported
(:mod:`toolmend.benchmarks`, :mod:`toolmend.strategies`); ``toolmend.get_model``, ``run_bench``
and the CLI import both first.

>>> model = get_model("scripted", script=["hello"])
>>> model.name
'scripted'

New backends register a factory ``(rest_of_string, cache, options) -> Model`` in :data:`MODELS`,
or from another package through the entry-point group ``toolmend.models``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError
from toolmend._http import RetryPolicy
from toolmend._registry import Registry
from toolmend.models._base import Model
from toolmend.models._cache import ResponseCache

__all__ = ["MODELS", "ModelFactory", "get_model", "resolve_cache"]

ModelFactory = Callable[[str, ResponseCache | None, dict[str, Any]], Model]
MODELS: Registry[ModelFactory] = Registry("model backend", group="toolmend.models")


def resolve_cache(cache: bool | str | Path | ResponseCache | None) -> ResponseCache | None:
    """``True`` → the default cache, ``False``/``None`` → no cache, a path → a cache there."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResponseCache()
    if isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)


def _take(options: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: options.pop(n) for n in names if n in options}


def _check_empty(kind: str, options: dict[str, Any]) -> None:
    if options:
        raise ConfigError(f"unexpected options for the {kind} backend: {', '.join(sorted(options))}")


@MODELS.register("openai")
def _openai(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    from toolmend.models._openai import OpenAIModel

    kw = _take(
        options, "base_url", "api_key", "api_key_env", "tool_mode", "tool_prompt", "timeout",
        "max_connections", "retry", "headers", "max_tokens", "temperature", "tool_choice", "context_length",
    )  # fmt: skip
    _check_empty("openai", options)
    return OpenAIModel(rest, cache=cache, **kw)


@MODELS.register("hf")
def _hf(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    from toolmend.models._hf import HFModel

    kw = _take(
        options,
        "batch_size",
        "max_new_tokens",
        "device",
        "tool_mode",
        "tool_prompt",
        "chat_template",
        "tool_choice",
        "few_shot",
    )
    _check_empty("hf", options)
    return HFModel(rest, cache=cache, **kw)


LOCAL_ENGINES = ("llama.cpp", "transformers")
LOCAL_MAX_NEW_TOKENS = 128
"""``local/``'s default reply budget: enough for a few calls, and a small CPU model that loops
stops after seconds, not minutes."""


@MODELS.register("local")
def _local(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    """``local/<name or path.gguf>``: the engine (``engine=`` option, else llama.cpp when
    llama-cpp-python is installed, else transformers) is part of the model's name, hence of the
    run's manifest: ``local/smollm2-135m (transformers)``."""
    import importlib.util

    from toolmend.models._gguf import resolve_gguf

    if not rest:
        raise ConfigError("local needs a model: local/<name> or local/<path>.gguf")
    engine = options.pop("engine", None) or (
        "llama.cpp" if importlib.util.find_spec("llama_cpp") is not None else "transformers"
    )
    if engine not in LOCAL_ENGINES:
        raise ConfigError(f"unknown local engine {engine!r}; expected one of {', '.join(LOCAL_ENGINES)}")
    resolve_gguf(rest)  # a missing package or file fails here, before any engine is imported
    name = f"local/{rest} ({engine})"
    common = ("max_new_tokens", "tool_mode", "tool_prompt", "chat_template", "few_shot")
    if engine == "llama.cpp":
        from toolmend.models._llamacpp import LlamaCppModel

        kw = _take(options, *common, "n_ctx", "n_threads", "tool_choice")
        _check_empty("local (llama.cpp)", options)
        kw.setdefault("max_new_tokens", LOCAL_MAX_NEW_TOKENS)
        return LlamaCppModel(rest, name=name, cache=cache, **kw)
    from toolmend.models._hf import HFModel

    kw = _take(options, *common, "batch_size", "device", "tool_choice")
    _check_empty("local (transformers)", options)
    kw.setdefault("max_new_tokens", LOCAL_MAX_NEW_TOKENS)
    return HFModel(rest, name=name, cache=cache, **kw)


@MODELS.register("vllm")
def _vllm(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    from toolmend.models._vllm import VLLMModel

    kw = _take(options, "batch_size", "max_new_tokens", "tool_mode", "tool_prompt", "engine_args")
    _check_empty("vllm", options)
    return VLLMModel(rest, cache=cache, **kw)


@MODELS.register("scripted")
def _scripted(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    from toolmend.models._fakes import ScriptedModel

    if "script" not in options:
        raise ConfigError(
            "the scripted backend needs script= (a list of replies or a function of the messages)"
        )
    kw = _take(options, "script", "delay", "max_connections")
    _check_empty("scripted", options)
    return ScriptedModel(kw.pop("script"), name=f"scripted/{rest}" if rest else "scripted", **kw)


@MODELS.register("replay")
def _replay(rest: str, cache: ResponseCache | None, options: dict[str, Any]) -> Model:
    from toolmend.models._fakes import ReplayModel

    if not rest:
        raise ConfigError("replay needs a predictions file: replay/<path>")
    _check_empty("replay", options)
    return ReplayModel(rest)


def get_model(
    model: str | Model,
    *,
    cache: bool | str | Path | ResponseCache | None = True,
    max_retries: int | None = None,
    **options: Any,
) -> Model:
    """The backend for a model string (see the module docstring); a :class:`Model` passes through.

    ``cache``: ``True`` (the default location, see :func:`~toolmend.models._cache.default_cache_dir`),
    a directory, a :class:`ResponseCache`, or ``False`` for none. ``max_retries`` sets the retry
    policy; other keyword options go to the backend (unknown ones are a :class:`ConfigError`).
    """
    if isinstance(model, Model):
        return model
    provider, _, rest = model.partition("/")
    factory = MODELS.get(provider)
    if max_retries is not None:
        options["retry"] = RetryPolicy(max_retries=max_retries)
    if provider != "openai":
        # Only the HTTP backend retries in a way these settings shape.
        options.pop("retry", None)
    return factory(rest, resolve_cache(cache), dict(options))
