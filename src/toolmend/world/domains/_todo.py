"""To-do list: the owner's tasks with due dates and priorities."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import Todo, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, Date, fail, not_found

Priority = Literal["low", "medium", "high"]


class TodoList(BaseModel):
    todos: list[Todo]
    count: int


@WORLD_TOOLS.tool(metadata=WRITES)
def todo_create(
    state: WorldState,
    title: Annotated[str, Field(min_length=1, max_length=120)],
    due_date: Date | None = None,
    priority: Priority = "medium",
) -> Todo:
    """Add a task to the to-do list.

    Args:
        title: What needs doing.
        due_date: When it is due.
        priority: How urgent it is.
    """
    tid = state.next_id("TD")
    state.todos[tid] = Todo(todo_id=tid, title=title, due_date=due_date, priority=priority)
    state.touch()
    return state.todos[tid]


@WORLD_TOOLS.tool
def todo_list(state: WorldState, status: Literal["open", "done", "all"] = "open") -> TodoList:
    """List tasks, earliest due first (tasks without a due date last).

    Args:
        status: Which tasks to list.
    """
    hits = [t for t in state.todos.values() if status == "all" or t.done == (status == "done")]
    hits.sort(key=lambda t: (t.due_date or "9999-12-31", t.todo_id))
    return TodoList(todos=hits, count=len(hits))


@WORLD_TOOLS.tool(metadata=WRITES)
def todo_complete(state: WorldState, todo_id: str) -> Todo:
    """Mark a task as done.

    Args:
        todo_id: Id of the task (e.g. "TD0002").
    """
    t = state.todos.get(todo_id) or not_found("task", todo_id)
    if t.done:
        fail("invalid_operation", f"task {todo_id} is already done", status=409)
    t.done = True
    state.touch()
    return t


@WORLD_TOOLS.tool(metadata=WRITES)
def todo_delete(state: WorldState, todo_id: str) -> Todo:
    """Remove a task.

    Args:
        todo_id: Id of the task.
    """
    t = state.todos.pop(todo_id, None) or not_found("task", todo_id)
    state.touch()
    return t
