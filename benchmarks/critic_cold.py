"""Where the cold `toolmend bench critic` job spends its CPU, each fix against its reference.

Run:  TOOLMEND_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/critic_cold.py

Every ratio is measured in this run (CPU seconds, time.process_time): the reference is what the
code did before (regenerate the world state, convert the tool list per record, one embedding
model call per text pair), the other side what it does now. Embeddings use in-memory caches only
(cold); the model load is paid before both sides.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolmend._schema import Message
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critictool import CriticToolBenchmark
from toolmend.benchmarks.critictool._checklist import critique
from toolmend.benchmarks.critictool._runner import run_sample
from toolmend.compare._embed import Embedder
from toolmend.formats._critictool import parse_tool_list, prompt_tools
from toolmend.formats._tools import load_tools
from toolmend.world import World
from toolmend.world._create import create_state


def cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def row(name: str, ref: float, new: float) -> None:
    print(f"{name:<44} reference {ref:7.3f} s   now {new:7.3f} s   ratio {ref / max(new, 1e-9):6.1f}x")


async def _predict(bench: CriticToolBenchmark, samples: list[Any]) -> list[Any]:
    async def generate(messages: list[Message]) -> str:
        return critique(messages)

    return [await run_sample(s, generate) for s in samples]


def main() -> None:
    out = Path(tempfile.mkdtemp())
    t_build, info = cpu(lambda: build_suite("world", seed=0, out=out))
    print(f"build_suite (world, seed 0): {t_build:.2f} s CPU, {info.total} records")

    # The suite's 214 world tasks share one seed; the builder makes ~3 fresh worlds per task.
    ref, _ = cpu(lambda: [create_state(0) for _ in range(600)])
    new, _ = cpu(lambda: [World.create(0) for _ in range(600)])
    row("600 fresh worlds, seed 0 (generate vs copy)", ref, new)

    bench = CriticToolBenchmark()
    t_load, samples = cpu(lambda: bench.load(out))
    print(f"load_critictool: {t_load:.2f} s CPU, {len(samples)} samples")
    systems = [s.messages[0].content for s in samples]
    ref, _ = cpu(lambda: [load_tools(parse_tool_list(t), dialect="critictool") for t in systems])
    new, _ = cpu(lambda: [prompt_tools(t) for t in systems])
    row("tool list per sample (parse+convert)", ref, new)

    import asyncio

    t_run, outputs = cpu(lambda: asyncio.run(_predict(bench, samples)))
    print(f"checklist critic on every sample: {t_run:.2f} s CPU")

    per_pair = Embedder(cache_path=False)
    batched = Embedder(cache_path=False)
    t_model, _ = cpu(lambda: (per_pair.encode(["warm up a"]), batched.encode(["warm up b"])))
    print(f"embedding model import + load (two copies): {t_model:.2f} s CPU")
    one_by_one = CriticToolBenchmark(similarity=per_pair.cosine)
    ref, want = cpu(lambda: [one_by_one.score(s, o) for s, o in zip(samples, outputs, strict=True)])
    together = CriticToolBenchmark(similarity=batched.cosine)

    def prepared() -> list[Any]:
        together.prepare(samples, outputs)
        return [together.score(s, o) for s, o in zip(samples, outputs, strict=True)]

    new, got = cpu(prepared)
    row("scoring, cold embeddings (per pair vs batch)", ref, new)
    diff = max(
        abs((w.values[k] or 0.0) - (g.values[k] or 0.0))
        for w, g in zip(want, got, strict=True)
        for k in w.values
    )
    print(f"largest per-sample score difference, per pair vs batched: {diff:.1e}")


if __name__ == "__main__":
    main()
