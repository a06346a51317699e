"""Micro-batching for in-process backends (HF, vLLM): concurrent ``generate`` calls are gathered
into one batched call on a worker thread, so a run's worker pool fills the batch by itself.

``run_batch`` returns one result per item; an exception *instance* in place of a result is raised
to that item's caller alone (a request the backend refuses, such as a prompt longer than the
context, must not fail the requests it was batched with), while an exception ``run_batch`` raises
reaches every caller of the batch.

>>> import asyncio
>>> batcher = MicroBatcher(lambda xs: [x * 2 for x in xs], max_batch=8)
>>> async def main() -> list[int]:
...     return list(await asyncio.gather(*(batcher.submit(i) for i in range(3))))
>>> asyncio.run(main()), batcher.batches
([0, 2, 4], 1)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from toolmend._errors import ConfigError

__all__ = ["MicroBatcher"]

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741


class MicroBatcher(Generic[I, O]):
    """Runs ``run_batch`` (blocking; one call at a time, on a thread) over items submitted
    concurrently; ``window_s`` is how long the first item waits for company."""

    def __init__(
        self,
        run_batch: Callable[[list[I]], Sequence[O | Exception]],
        *,
        max_batch: int = 8,
        window_s: float = 0.01,
    ) -> None:
        if max_batch < 1:
            raise ConfigError("max_batch must be at least 1")
        self.run_batch = run_batch
        self.max_batch = max_batch
        self.window_s = window_s
        self.batches = 0
        self._pending: list[tuple[I, asyncio.Future[O]]] = []
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, item: I) -> O:
        """Queue ``item`` and wait for its result (exceptions of the batch are raised here)."""
        future: asyncio.Future[O] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(self.window_s)
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            live = [(item, fut) for item, fut in batch if not fut.cancelled()]
            if not live:
                continue
            self.batches += 1
            try:
                results = await asyncio.to_thread(self.run_batch, [item for item, _ in live])
            except Exception as exc:  # every waiter of the failed batch gets the error
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), result in zip(live, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, Exception):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)
