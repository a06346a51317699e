"""The llama.cpp engine of ``local/``: a GGUF file run in-process by llama-cpp-python (extra ``local``).

Same prompt and same call parsing as the transformers engine (:mod:`toolmend.models._hf`): the
file's chat template (or toolmend's, for a named model whose own ignores tools) rendered by
llama-cpp-python's Jinja2 chat formatter with the tools in native mode, a template that ignores
tools refused in native mode, and the calls the model writes parsed by
:func:`~toolmend.models._hf.native_completion`. Requests run one at a time (a llama.cpp context
holds one sequence), each prompt read from scratch; greedy unless ``temperature`` > 0, then
plain temperature sampling from a seed of the request's own
(:func:`~toolmend.models._hf.stream_seed`). A prompt longer than the context is a
:class:`~toolmend.ModelError` raised before generating. ``tool_choice`` (a request's, else the
constructor's: ``-M tool_choice=required``, not after tool results) is enforced while decoding
exactly as the transformers engine does it (:class:`~toolmend.models._hf.ForcedOpening`): the reply opens with a Hermes call of
an offered tool and its first parameter, and the rest is the model's own.

Closing the model (:meth:`LlamaCppModel.aclose`, the end of ``async with``) waits for the reply
being written: llama.cpp frees the context and weights that a worker thread would otherwise go on
reading, which crashed the whole process (a run ended by an exception while requests were in
flight). A reply that nobody awaits any more (its request cancelled, or the model closed) stops
at its next token, and requests still queued then never start.

The context (``n_ctx``) is by default the one the model was trained with, as the GGUF file states
it (``<architecture>.context_length``: 8,192 for SmolLM2), at most :data:`MAX_DEFAULT_N_CTX`
(16,384) tokens, so that a model trained on 128k tokens does not allocate a 128k-token KV cache
unasked; 4,096 where the file states none. ``-M n_ctx=N`` sets it::

    model = LlamaCppModel("smollm2-135m", n_ctx=4096)
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, MissingExtraError, ModelError
from toolmend._schema import ToolCall
from toolmend.formats._tools import to_openai_tool
from toolmend.models._base import Completion, GenerateRequest, Model, RawToolCall, ToolChoice, ToolMode, Usage
from toolmend.models._cache import ResponseCache
from toolmend.models._gguf import resolve_gguf
from toolmend.models._hf import (
    FewShotSource,
    ForcedOpening,
    call_openings,
    chat_dicts,
    default_choice,
    fingerprint_dir,
    ignores_tools,
    load_few_shot,
    native_completion,
    no_tools_error,
    stream_seed,
)
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT

__all__ = ["MAX_DEFAULT_N_CTX", "LlamaCppModel", "default_n_ctx", "trained_context"]

MAX_DEFAULT_N_CTX = 16384
"""The largest context taken by default (from the model's training context); ``n_ctx`` sets more."""
_FALLBACK_N_CTX = 4096
"""The default context of a file that does not state its training context."""


def default_n_ctx(trained: int | None) -> int:
    """The context a model gets when ``n_ctx`` is not given, from its training context.

    >>> default_n_ctx(8192), default_n_ctx(131072), default_n_ctx(None)
    (8192, 16384, 4096)
    """
    return _FALLBACK_N_CTX if trained is None else min(trained, MAX_DEFAULT_N_CTX)


def trained_context(path: str | Path) -> int | None:
    """The context length the GGUF file at ``path`` says its model was trained with
    (``<general.architecture>.context_length``), ``None`` where it says none. Only the file's
    metadata and vocabulary are read (no weights, no context): a fraction of a second."""
    import llama_cpp

    # What Llama(verbose=False) sets too: the metadata read is not narrated on stderr.
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return None
    try:
        buffer = ctypes.create_string_buffer(256)

        def meta(key: str) -> str | None:
            n = llama_cpp.llama_model_meta_val_str(model, key.encode(), buffer, len(buffer))
            return buffer.value.decode("utf-8", "replace") if n >= 0 else None

        arch = meta("general.architecture")
        value = meta(f"{arch}.context_length") if arch else None
    finally:
        llama_cpp.llama_model_free(model)
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None


class LlamaCppModel(Model):
    """A GGUF model run by llama-cpp-python (see the module docstring)."""

    engine = "llama.cpp"
    http = False

    def __init__(
        self,
        ref: str,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        max_new_tokens: int = 512,
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        chat_template: str | None = None,
        name: str | None = None,
        cache: ResponseCache | None = None,
        few_shot: FewShotSource | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> None:
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError("llama-cpp-python", "local", "the llama.cpp engine") from exc
        self.source = resolve_gguf(ref)
        super().__init__(name or f"local/{ref}", cache=cache, max_connections=4)
        if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 1):
            raise ConfigError(f"n_ctx must be a positive number of tokens, got {n_ctx!r}")
        self._n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_new_tokens = max_new_tokens
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.chat_template = chat_template or self.source.chat_template
        self.stop = list(self.source.stop)
        """Texts that end every reply (a base model's transcript)."""
        self.few_shot = load_few_shot(few_shot)
        """Worked examples put after the system message of every request."""
        self.tool_choice = None if tool_choice == "auto" else tool_choice
        """The ``tool_choice`` of requests with tools that set none."""
        self._pieces: list[str] | None = None
        self._llm: Any = None
        self._formatter: Any = None
        self._ignores_tools: bool | None = None
        # Reentrant: rendering takes it too, and the tools check renders while generating.
        self._lock = threading.RLock()
        self._closes = 0
        """How many times :meth:`aclose` ran: a request made before a close is abandoned by it."""

    @property
    def n_ctx(self) -> int:
        """The context in tokens: the ``n_ctx`` given, else the model's training context read
        from the file, at most :data:`MAX_DEFAULT_N_CTX` (see the module docstring)."""
        if self._n_ctx is None:
            self._n_ctx = default_n_ctx(trained_context(self.source.path))
        return self._n_ctx

    def cache_identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "backend": "local",
            "engine": self.engine,
            "path": str(self.source.path.resolve()),
            "fingerprint": fingerprint_dir(self.source.path),
            "tool_mode": self.tool_mode,
            "max_new_tokens": self.max_new_tokens,
        }
        if self.chat_template is not None:
            identity["chat_template"] = hashlib.sha256(self.chat_template.encode()).hexdigest()[:16]
        if self.stop:
            identity["stop"] = self.stop
        if self.few_shot:
            identity["few_shot"] = hashlib.sha256(json.dumps(self.few_shot).encode()).hexdigest()[:16]
        if self.tool_choice is not None:
            identity["tool_choice"] = self.tool_choice
            identity["tool_choice_after_tool_results"] = "auto"
        return identity

    def request_defaults(self) -> dict[str, Any]:
        """The ``tool_choice`` given to requests that set none, where one is set."""
        return {"tool_choice": self.tool_choice} if self.tool_choice is not None else {}

    def choice(self, request: GenerateRequest) -> ToolChoice | None:
        """The ``tool_choice`` that ``request`` is decoded under (:func:`~toolmend.models._hf.default_choice`)."""
        return default_choice(request, self.tool_choice)

    def _forced(self, llm: Any, openings: list[str], prompt_len: int) -> Any:
        """A llama-cpp-python logits processor that makes the reply open with one of ``openings``."""
        import numpy as np

        if self._pieces is None:
            self._pieces = [
                llm.detokenize([i], special=True).decode("utf-8", "replace") for i in range(llm.n_vocab())
            ]
        forced = ForcedOpening(self._pieces, [openings], prompt_len)
        pieces = self._pieces

        def process(input_ids: Any, scores: Any) -> Any:
            written = "".join(pieces[int(t)] for t in input_ids[prompt_len:])
            ids = forced.allowed(written, openings)
            if ids is None:
                return scores
            out = np.full_like(scores, -np.inf)
            out[ids] = scores[ids]
            return out

        return process

    def _load(self) -> tuple[Any, Any]:
        if self._llm is None:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llm = Llama(
                model_path=str(self.source.path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                # the prompt is read with as many threads as replies are written (llama.cpp's
                # default is every core, which a shared machine does not have to give)
                n_threads_batch=self.n_threads,
                verbose=False,
            )
            template = self.chat_template or llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise ModelError(f"{self.source.path}: the file has no chat template")

            def text_of(token: int) -> str:
                if token < 0:
                    return ""
                piece: bytes = llm.detokenize([token], special=True)
                return piece.decode("utf-8", "replace")

            self._formatter = Jinja2ChatFormatter(
                template=template, eos_token=text_of(llm.token_eos()), bos_token=text_of(llm.token_bos())
            )
            self._llm = llm
        return self._llm, self._formatter

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        """The prompt for ``messages`` and ``tools`` (``None``: no tools)."""
        with self._lock:
            _, formatter = self._load()
            prompt: str = formatter(messages=messages, tools=tools).prompt
        return prompt

    async def _generate(self, request: GenerateRequest) -> Completion:
        cancelled = threading.Event()
        closes = self._closes

        def abandoned() -> bool:
            return cancelled.is_set() or self._closes != closes

        try:
            return await asyncio.to_thread(self._generate_one, request, abandoned)
        except asyncio.CancelledError:
            # The worker thread cannot be cancelled: it is told to stop at its next token, so that
            # a timed-out or interrupted request does not keep the context from the next one.
            cancelled.set()
            raise

    def _abandoned(self) -> ModelError:
        return ModelError(
            f"{self.name}: the request was cancelled or the model closed before its reply was written"
        )

    def _generate_one(
        self, request: GenerateRequest, abandoned: Callable[[], bool] = lambda: False
    ) -> Completion:
        with self._lock:  # one llama.cpp context, one sequence at a time
            if abandoned():  # a request queued behind a close must not load the model again
                raise self._abandoned()
            llm, formatter = self._load()
            native = self.tool_mode == "native" and bool(request.tools)
            if native:
                if self._ignores_tools is None:
                    self._ignores_tools = ignores_tools(self.render)
                if self._ignores_tools:
                    raise no_tools_error(self.name)
            choice = self.choice(request) if native else None
            tools = [to_openai_tool(t) for t in request.tools] if native and choice != "none" else None
            openings = call_openings(request.tools, choice) if tools else None
            formatted = formatter(
                messages=chat_dicts(request, self.tool_mode, self.tool_prompt, self.few_shot), tools=tools
            )
            prompt_tokens = llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True)
            cfg = request.config
            budget = cfg.max_tokens or self.max_new_tokens
            if len(prompt_tokens) + budget > self.n_ctx:
                raise ModelError(
                    f"{self.name}: the prompt has {len(prompt_tokens)} tokens and up to {budget} more may be "
                    f"generated, beyond the context of {self.n_ctx} (set n_ctx)"
                )
            own = formatted.stop or []
            stop = [
                s for s in [*([own] if isinstance(own, str) else own), *self.stop, *(cfg.stop or [])] if s
            ]
            from llama_cpp import StoppingCriteriaList

            extra: dict[str, Any] = {
                "stopping_criteria": StoppingCriteriaList([lambda _ids, _logits: abandoned()])
            }
            if openings:
                from llama_cpp import LogitsProcessorList

                extra["logits_processor"] = LogitsProcessorList(
                    [self._forced(llm, openings, len(prompt_tokens))]
                )
            temperature = cfg.temperature or 0.0
            # Every prompt is read from scratch: reusing the previous request's cached prefix
            # computes the last prompt token's logits in another batch shape, which changed
            # sampled replies (and can change greedy ones) with the order requests came in.
            llm.reset()
            out = llm.create_completion(
                prompt=prompt_tokens,
                **extra,
                max_tokens=budget,
                temperature=temperature,
                top_p=cfg.top_p if cfg.top_p is not None else 1.0,
                # plain temperature sampling, as the transformers engine draws (llama.cpp's own
                # defaults would cut the distribution to its top 40 and min-p 0.05)
                top_k=0,
                min_p=0.0,
                stop=stop,
                # one stream per request (run seed, sample, prompt), as the transformers engine;
                # llama.cpp seeds are 32-bit, and 0xFFFFFFFF asks it for a random one
                seed=stream_seed(cfg.seed, request, formatted.prompt) % 0xFFFFFFFF
                if temperature > 0
                else None,
            )
            if abandoned():
                raise self._abandoned()
        choice = out["choices"][0]
        text = choice["text"]
        calls: list[ToolCall] = []
        raws: list[RawToolCall] = []
        if tools:
            text, calls, raws = native_completion(text, request.tools)
        usage = out.get("usage") or {}
        return Completion(
            text=text,
            tool_calls=calls,
            raw_tool_calls=raws,
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", len(prompt_tokens))),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            finish_reason=choice.get("finish_reason"),
            model=self.name,
        )

    async def aclose(self) -> None:
        """Free the llama.cpp context and weights once no thread uses them: the reply being written
        stops at its next token and queued requests fail; a later request loads the model again."""
        self._closes += 1
        await asyncio.to_thread(self._free)

    def _free(self) -> None:
        with self._lock:
            llm, self._llm, self._formatter = self._llm, None, None
            if llm is not None and hasattr(llm, "close"):
                llm.close()
