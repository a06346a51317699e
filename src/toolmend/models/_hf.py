"""``hf/<local path>``: a transformers causal LM run in-process (extra ``hf``).

The prompt is the tokenizer's chat template (tools passed to it as JSON Schemas in native
mode, or described in the system prompt in prompt mode). Concurrent ``generate`` calls are
batched (left padding) up to ``batch_size``. Decoding is greedy unless ``temperature`` > 0.
Tool calls come back as text — templates disagree on how they write them — so parse
``Completion.text`` with :mod:`toolmend.formats`.

Sampling gives each request a random stream of its own, seeded from the config's ``seed``, the
sample id, the epoch and the prompt (Gumbel-max over the model's logits after temperature and the
model's top-k / top-p / min-p, which is an exact draw from that distribution). A reply therefore
does not depend on the batch it lands in, the same request with the same seed is answered the
same way, and the replies of different samples are independent. (Re-seeding torch's one
generator per batch would make every batch replay the same stream: the k-th reply of each batch
would share its random numbers, and an evaluation's samples would not be independent.)

    model = HFModel("./checkpoints/qwen-0.5b", batch_size=16)
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError, MissingExtraError, ModelError
from toolmend.formats._tools import to_openai_tool
from toolmend.models._base import Completion, GenerateConfig, GenerateRequest, Model, ToolMode, Usage
from toolmend.models._batching import MicroBatcher
from toolmend.models._cache import ResponseCache
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT, render_tools_prompt, to_wire_messages
from toolmend.models._tool_names import ToolNameMap

__all__ = ["HFModel", "chat_dicts", "fingerprint_dir"]


def fingerprint_dir(path: Path) -> str:
    """A cheap fingerprint of a checkpoint (file names, sizes, mtimes), so that retraining into the
    same folder does not serve the old model's cached answers."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        st = p.stat()
        h.update(
            f"{p.relative_to(path) if path.is_dir() else p.name}:{st.st_size}:{st.st_mtime_ns};".encode()
        )
    return h.hexdigest()[:16]


def chat_dicts(request: GenerateRequest, mode: ToolMode, tool_prompt: str) -> list[dict[str, Any]]:
    """Messages for a local chat template: the OpenAI shape, with call arguments as objects (what
    Hugging Face templates expect)."""
    names = ToolNameMap([])  # local templates take any name
    prompt_tools = mode == "prompt" and bool(request.tools)
    messages = to_wire_messages(
        request.messages,
        names=names,
        mode=mode,
        system_suffix=render_tools_prompt(request.tools, tool_prompt) if prompt_tools else None,
    )
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            fn["arguments"] = json.loads(fn["arguments"])
        if m.get("content") is None:
            m["content"] = ""
    return messages


class HFModel(Model):
    """A local transformers checkpoint (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        batch_size: int = 8,
        max_new_tokens: int = 512,
        device: str | None = None,
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        cache: ResponseCache | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise ConfigError(f"hf model path {self.path} does not exist")
        if not (self.path / "config.json").is_file():
            raise ConfigError(f"hf model path {self.path} is not a model folder (it has no config.json)")
        super().__init__(f"hf/{path}", cache=cache, max_connections=max(64, batch_size))
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.batcher: MicroBatcher[GenerateRequest, Completion] = MicroBatcher(
            self._run_batch, max_batch=batch_size
        )
        self._model: Any = None
        self._tokenizer: Any = None

    def cache_identity(self) -> dict[str, Any]:
        return {
            "backend": "hf",
            "path": str(self.path.resolve()),
            "fingerprint": fingerprint_dir(self.path),
            "tool_mode": self.tool_mode,
            "max_new_tokens": self.max_new_tokens,
        }

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError as exc:
                raise MissingExtraError("transformers", "hf", "the hf backend") from exc
            tokenizer = AutoTokenizer.from_pretrained(self.path)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            if not getattr(tokenizer, "chat_template", None):
                raise ModelError(f"{self.path}: the tokenizer has no chat template")
            model: Any = AutoModelForCausalLM.from_pretrained(self.path)
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._model = model.to(device).eval()
            self._tokenizer = tokenizer
        return self._model, self._tokenizer

    async def _generate(self, request: GenerateRequest) -> Completion:
        return await self.batcher.submit(request)

    def _run_batch(self, requests: list[GenerateRequest]) -> list[Completion]:
        # One generate() per distinct setting: a batch shares temperature, stop strings, etc.
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.config.model_dump_json(), []).append(i)
        results: list[Completion | None] = [None] * len(requests)
        for indices in groups.values():
            outs = self._generate_group([requests[i] for i in indices], requests[indices[0]].config)
            for i, out in zip(indices, outs, strict=True):
                results[i] = out
        return [r for r in results if r is not None]

    def _generate_group(self, requests: list[GenerateRequest], cfg: GenerateConfig) -> list[Completion]:
        import torch

        model, tokenizer = self._load()
        texts = []
        for r in requests:
            tools = [to_openai_tool(t) for t in r.tools] if self.tool_mode == "native" and r.tools else None
            texts.append(
                tokenizer.apply_chat_template(
                    chat_dicts(r, self.tool_mode, self.tool_prompt),
                    tools=tools,
                    add_generation_prompt=True,
                    tokenize=False,
                )
            )
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": cfg.max_tokens or self.max_new_tokens,
            # Sampling too decodes by argmax: over logits plus each request's own Gumbel noise.
            "do_sample": False,
            "pad_token_id": tokenizer.pad_token_id,
        }
        if cfg.temperature is not None and cfg.temperature > 0:
            seeds = [_stream_seed(cfg.seed, r, text) for r, text in zip(requests, texts, strict=True)]
            kwargs["logits_processor"] = _sampler(model, cfg, seeds)
        if cfg.stop:
            kwargs.update(stop_strings=cfg.stop, tokenizer=tokenizer)
        with torch.no_grad():
            out = model.generate(**enc, **kwargs)
        prompt_len = enc["input_ids"].shape[1]
        completions = []
        eos = tokenizer.eos_token_id
        for row, mask in zip(out, enc["attention_mask"], strict=True):
            new = row[prompt_len:].tolist()
            n = next((k for k, t in enumerate(new) if t in (eos, tokenizer.pad_token_id)), None)
            used = new if n is None else new[: n + (1 if new[n] == eos else 0)]
            completions.append(
                Completion(
                    text=tokenizer.decode(used, skip_special_tokens=True),
                    usage=Usage(input_tokens=int(mask.sum()), output_tokens=len(used)),
                    finish_reason="stop" if n is not None else "length",
                    model=self.name,
                )
            )
        return completions

    async def aclose(self) -> None:
        self._model = None
        self._tokenizer = None


def _stream_seed(seed: int | None, request: GenerateRequest, prompt: str) -> int:
    """The seed of one request's random stream: from the run's ``seed``, the request's sample id
    and epoch, and its rendered prompt; a fresh one for each request when ``seed`` is ``None``."""
    if seed is None:
        return secrets.randbits(63)
    key = json.dumps([seed, request.sample_id, request.epoch, prompt])
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def _sampler(model: Any, cfg: GenerateConfig, seeds: list[int]) -> Any:
    """The logits processors of sampling: the warpers ``generate(do_sample=True)`` would apply
    (``cfg``'s temperature and top-p, the model's own top-k, top-p and min-p defaults), then Gumbel
    noise from one generator per row, so that argmax draws each row from its own stream."""
    import torch
    from transformers import (
        LogitsProcessor,
        LogitsProcessorList,
        MinPLogitsWarper,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    defaults = model.generation_config
    warpers: list[Any] = []
    if cfg.temperature is not None and cfg.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(cfg.temperature))
    if defaults.top_k:
        warpers.append(TopKLogitsWarper(defaults.top_k))
    top_p = cfg.top_p if cfg.top_p is not None else defaults.top_p
    if top_p is not None and top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    if defaults.min_p is not None:
        warpers.append(MinPLogitsWarper(defaults.min_p))

    class RowStreams(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = [torch.Generator(device=model.device).manual_seed(s) for s in seeds]

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            # -log(E) with E ~ Exp(1) is Gumbel noise; argmax(scores + noise) is a softmax draw.
            noise = torch.stack(
                [torch.empty(scores.shape[-1], device=scores.device).exponential_(generator=g) for g in self.generators]
            )
            return scores - noise.clamp_(min=torch.finfo(noise.dtype).tiny).log()

    return LogitsProcessorList([*warpers, RowStreams()])
