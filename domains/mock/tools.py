"""Tools of the mock domain: a small to-do service, plus a to-do app on the user's phone."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tauproxy.domain.state import State
from tauproxy.domain.tools import assertion, tool, user_tool
from tauproxy.errors import ToolExecutionError

TaskStatus = Literal["open", "done"]
Priority = Literal["low", "normal", "high"]
TaskId = Annotated[str, Field(pattern=r"^task_\d{1,4}$", max_length=9)]
UserId = Annotated[str, Field(pattern=r"^usr_[a-z]{1,12}$", max_length=16)]


def _user(db: State, user_id: str) -> dict:
    user = db.users.get(user_id)
    if user is None:
        raise ToolExecutionError(f"user {user_id} not found")
    return user


def _task(db: State, task_id: str) -> dict:
    record = db.todos.get(task_id)
    if record is None:
        raise ToolExecutionError(f"task {task_id} not found")
    return record


@tool("read")
def find_user_by_email(db: State, email: str) -> dict:
    """Find a user by their email address.

    Args:
        email: The user's email address.
    """
    for user_id, user in db.users.items():
        if user["email"].lower() == email.strip().lower():
            return {"user_id": user_id, **user}
    raise ToolExecutionError(f"no user with email {email}")


@tool("read")
def list_tasks(db: State, user_id: UserId) -> list[dict]:
    """List a user's to-do tasks, high priority first.

    Args:
        user_id: The user's id, such as usr_ada.
    """
    _user(db, user_id)
    order = {"high": 0, "normal": 1, "low": 2}
    mine = [{"task_id": tid, **t} for tid, t in db.todos.items() if t["user_id"] == user_id]
    return sorted(mine, key=lambda t: (order[t["priority"]], t["task_id"]))


@tool("read")
def get_task(db: State, task_id: TaskId) -> dict:
    """Get one to-do task.

    Args:
        task_id: The task's id, such as task_3.
    """
    return {"task_id": task_id, **_task(db, task_id)}


@tool("write")
def create_task(
    db: State, user_id: UserId, title: str, due_date: str | None = None, priority: Priority = "normal"
) -> dict:
    """Create a to-do task for a user.

    Args:
        user_id: The user's id.
        title: A short title.
        due_date: Optional due date, YYYY-MM-DD.
        priority: low, normal or high.
    """
    user = _user(db, user_id)
    if user["plan"] == "free" and sum(1 for t in db.todos.values() if t["user_id"] == user_id) >= 5:
        raise ToolExecutionError("free plan users can have at most 5 tasks")
    task_id = f"task_{len(db.todos) + 1}"
    while task_id in db.todos:
        task_id = f"task_{int(task_id.split('_')[1]) + 1}"
    record = {"user_id": user_id, "title": title, "status": "open", "due_date": due_date, "priority": priority}
    db.todos.put(task_id, record)
    return {"task_id": task_id, **record}


@tool("write")
def complete_task(db: State, task_id: TaskId) -> dict:
    """Mark a to-do task as done.

    Args:
        task_id: The task's id.
    """
    record = _task(db, task_id)
    record["status"] = "done"
    return {"task_id": task_id, **record}


@tool("write")
def set_due_date(db: State, task_id: TaskId, due_date: str) -> dict:
    """Change the due date of a to-do task.

    Args:
        task_id: The task's id.
        due_date: The new due date, YYYY-MM-DD.
    """
    record = _task(db, task_id)
    record["due_date"] = due_date
    return {"task_id": task_id, **record}


@tool("write")
def delete_task(db: State, task_id: TaskId) -> str:
    """Delete a to-do task for good.

    Args:
        task_id: The task's id.
    """
    _task(db, task_id)
    db.todos.delete(task_id)
    return f"deleted {task_id}"


@tool("read")
def transfer_to_human_agents(db: State, summary: str) -> str:
    """Hand the conversation to a human agent. Use only when the policy says so.

    Args:
        summary: A short summary of the user's issue for the human agent.
    """
    return "Transfer successful"


@user_tool("read")
def check_sync_status(db: State) -> dict:
    """Look at the sync settings screen of your to-do app."""
    return dict(db.phone["app"])


@user_tool("write")
def set_sync(db: State, enabled: bool) -> dict:
    """Switch background sync of your to-do app on or off.

    Args:
        enabled: True to switch sync on.
    """
    app = db.phone["app"]
    app["sync_enabled"] = enabled
    app["last_sync"] = "just now" if enabled else app["last_sync"]
    return dict(app)


@assertion
def sync_enabled(db: State) -> bool:
    return bool(db.phone["app"]["sync_enabled"])


@assertion
def task_status(db: State, task_id: str) -> str | None:
    record = db.todos.get(task_id)
    return None if record is None else record["status"]
