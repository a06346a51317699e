"""The built-in executable tool world: 50 tools over 10 domains, a seeded state, and tasks with
gold trajectories (nested chains and parallel calls).

>>> from toolmend.world import World, generate_tasks
>>> world = World.create(seed=0)
>>> tasks = generate_tasks(seed=0)
>>> len(tasks) >= 150
True
"""

from toolmend.world._rl import WorldEnv, trl_environment_factory, world_dataset
from toolmend.world._state import WorldState
from toolmend.world._tasks import Chain, Task, generate_tasks
from toolmend.world._world import World
from toolmend.world.domains import DOMAINS, WORLD_TOOLS, domain_of

__all__ = [
    "DOMAINS",
    "WORLD_TOOLS",
    "Chain",
    "Task",
    "World",
    "WorldEnv",
    "WorldState",
    "domain_of",
    "generate_tasks",
    "trl_environment_factory",
    "world_dataset",
]
