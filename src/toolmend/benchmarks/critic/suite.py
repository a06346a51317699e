"""The ``critic`` suite: ``toolmend bench critic`` builds the world suite for the seed and runs the
checklist critic on it with the CriticTool benchmark (the project's main job)."""

from __future__ import annotations

from pathlib import Path

from toolmend.benchmarks.base import Suite
from toolmend.benchmarks.critic.build import build_suite

__all__ = ["CRITIC_SUITE"]


def _build(seed: int, out: Path) -> Path:
    return build_suite(source="world", seed=seed, out=out).root


CRITIC_SUITE = Suite(benchmark="critictool", build=_build, default_model="checklist")
