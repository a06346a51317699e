"""``vllm/<local path>``: vLLM's offline engine in-process (extra ``vllm``, CUDA GPU only).

Concurrent ``generate`` calls are gathered into one ``LLM.chat`` call of up to ``batch_size``
conversations, which is where vLLM's throughput comes from. Greedy unless ``temperature`` > 0.
On a machine without vLLM the constructor raises :class:`~toolmend.MissingExtraError`; without
a CUDA device, :class:`~toolmend.ModelError` — both before any weights are read. To drive a
vLLM *server*, use ``openai/<model>`` with its ``base_url`` instead.

    model = VLLMModel("./checkpoints/qwen-7b", batch_size=256, engine_args={"max_model_len": 8192})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolmend._errors import MissingExtraError, ModelError
from toolmend.formats._tools import to_openai_tool
from toolmend.models._base import Completion, GenerateRequest, Model, ToolMode, Usage
from toolmend.models._batching import MicroBatcher
from toolmend.models._cache import ResponseCache
from toolmend.models._hf import chat_dicts, fingerprint_dir
from toolmend.models._openai_wire import DEFAULT_TOOL_PROMPT

__all__ = ["VLLMModel"]


def _require_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise MissingExtraError("vllm", "vllm", "the vllm backend") from exc
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - vllm depends on torch
        raise MissingExtraError("torch", "vllm", "the vllm backend") from exc
    if not torch.cuda.is_available():
        raise ModelError("the vllm backend needs a CUDA GPU and none is visible; use hf/<path> on CPU")
    return vllm


class VLLMModel(Model):
    """A local checkpoint served by an in-process vLLM engine (see the module docstring)."""

    http = False

    def __init__(
        self,
        path: str | Path,
        *,
        batch_size: int = 256,
        max_new_tokens: int = 1024,
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        engine_args: dict[str, Any] | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self._vllm = _require_vllm()
        super().__init__(f"vllm/{path}", cache=cache, max_connections=max(batch_size, 1))
        self.path = Path(path).expanduser()
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.engine_args = dict(engine_args or {})
        self.batcher: MicroBatcher[GenerateRequest, Completion] = MicroBatcher(
            self._run_batch, max_batch=batch_size, window_s=0.02
        )
        self._llm: Any = None

    def cache_identity(self) -> dict[str, Any]:
        return {
            "backend": "vllm",
            "path": str(self.path.resolve()),
            "fingerprint": fingerprint_dir(self.path),
            "tool_mode": self.tool_mode,
            "max_new_tokens": self.max_new_tokens,
        }

    def _engine(self) -> Any:
        if self._llm is None:
            self._llm = self._vllm.LLM(model=str(self.path), **self.engine_args)
        return self._llm

    async def _generate(self, request: GenerateRequest) -> Completion:
        return await self.batcher.submit(request)

    def _run_batch(self, requests: list[GenerateRequest]) -> list[Completion]:
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            spec = [t.model_dump(mode="json") for t in r.tools] if self.tool_mode == "native" else []
            groups.setdefault(json.dumps([r.config.model_dump(mode="json"), spec]), []).append(i)
        results: list[Completion | None] = [None] * len(requests)
        for indices in groups.values():
            first = requests[indices[0]]
            cfg = first.config
            params = self._vllm.SamplingParams(
                temperature=cfg.temperature or 0.0,
                top_p=cfg.top_p if cfg.top_p is not None else 1.0,
                max_tokens=cfg.max_tokens or self.max_new_tokens,
                stop=cfg.stop,
                seed=cfg.seed,
                **cfg.extra,
            )
            tools = (
                [to_openai_tool(t) for t in first.tools]
                if self.tool_mode == "native" and first.tools
                else None
            )
            outputs = self._engine().chat(
                [chat_dicts(requests[i], self.tool_mode, self.tool_prompt) for i in indices],
                params,
                use_tqdm=False,
                tools=tools,
            )
            for i, out in zip(indices, outputs, strict=True):
                gen = out.outputs[0]
                results[i] = Completion(
                    text=gen.text,
                    usage=Usage(
                        input_tokens=len(out.prompt_token_ids or []), output_tokens=len(gen.token_ids)
                    ),
                    finish_reason=gen.finish_reason,
                    model=self.name,
                )
        return [r for r in results if r is not None]

    async def aclose(self) -> None:
        self._llm = None
