"""The cold `toolmend bench critic` job: its phases, each fix against its reference, or the whole job.

Run:  TOOLMEND_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/critic_cold.py
      .venv/bin/python benchmarks/critic_cold.py --job [--before SRC] [--repeat N]

Phases: every ratio is measured in this run (CPU seconds, time.process_time): the reference is
what the code did before (regenerate the world state, convert the tool list per record, one
embedding model call per text pair), the other side what it does now. Embeddings use in-memory
caches only (cold); the model load is paid before both sides.

``--job``: the main job as a user runs it (``python -m toolmend bench critic``, progress off),
cold (a new, empty toolmend cache folder: no built suite, no cached replies, no cached
embeddings) and then warm (the same command again, on that cache). Each run is a child process;
its CPU is user + sys from the kernel's accounting of that child (BLAS threads included), and
the load average is printed beside the wall time, which on a shared machine is mostly waiting.
``--before SRC`` also runs the same job with the ``src`` folder SRC first on the path (another
checkout's code, e.g. before a change), alternating the two, and gives the ratios before / now
of the cold and warm CPU; without it the ratio is cold / warm. The two sides' metric tables are
compared and must be the same.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
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


def job(src: Path | None, cache: Path, workdir: Path) -> tuple[float, float, float, str]:
    """One `bench critic` run in a child process: (CPU s, wall s, load average at the end, table)."""
    env = {**os.environ, "TOOLMEND_CACHE_DIR": str(cache), "CI": "1"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolmend", "bench", "critic", "--runs-dir", str(workdir / "runs")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    stdout = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench critic failed (exit {os.waitstatus_to_exitcode(status)})")
    table = "\n".join(line for line in stdout.splitlines() if re.match(r"^[│┃┏┡└]", line))
    return usage.ru_utime + usage.ru_stime, wall, os.getloadavg()[0], table


def whole_job(before: Path | None, repeat: int) -> None:
    sides: list[tuple[str, Path | None]] = [("now", None)]
    if before is not None:
        sides.insert(0, ("before", before))
    cpu_of: dict[tuple[str, str], list[float]] = {}
    tables: dict[str, str] = {}
    for _ in range(repeat):
        for name, src in sides:
            root = Path(tempfile.mkdtemp(prefix="critic-job-"))
            try:
                for phase in ("cold", "warm"):
                    cpu_s, wall, load, table = job(src, root / "cache", root)
                    cpu_of.setdefault((name, phase), []).append(cpu_s)
                    tables.setdefault(name, table)
                    if tables[name] != table:
                        raise SystemExit(f"{name}: the {phase} run's metrics differ from the cold run's")
                    print(f"{name:<6} {phase}: {cpu_s:6.2f} s CPU   {wall:6.2f} s wall   load {load:5.2f}")
            finally:
                shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in cpu_of.items()}
    if before is not None:
        for phase in ("cold", "warm"):
            ratio = med["before", phase] / med["now", phase]
            print(f"{phase} CPU, median: before {med['before', phase]:.2f} s, now {med['now', phase]:.2f} s, "
                  f"ratio {ratio:.2f}x")  # fmt: skip
        print("metrics: " + ("the same" if tables["before"] == tables["now"] else "DIFFERENT"))
        if tables["before"] != tables["now"]:
            raise SystemExit(1)
    else:
        ratio = med["now", "cold"] / med["now", "warm"]
        print(f"cold {med['now', 'cold']:.2f} s CPU, warm {med['now', 'warm']:.2f} s CPU: cold / warm {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", action="store_true", help="time the whole job, cold then warm")
    parser.add_argument("--before", type=Path, help="with --job: a src folder to compare against")
    parser.add_argument("--repeat", type=int, default=1, help="with --job: runs per side")
    args = parser.parse_args()
    if args.job:
        whole_job(args.before, args.repeat)
        return
    phases()


def phases() -> None:
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
