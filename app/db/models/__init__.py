"""All tables; importing this package registers them on the metadata."""

from app.db.models.agent import Agent
from app.db.models.api_token import ApiToken
from app.db.models.attachment import Attachment
from app.db.models.device import Device
from app.db.models.mcp_connection import McpConnection, McpOAuthState
from app.db.models.memory import Memory
from app.db.models.memory_vector import memory_vector_versions, memory_vectors
from app.db.models.push import (
    LiveActivity,
    LiveActivityStartToken,
    PushDelivery,
    PushEvent,
    push_presence,
)
from app.db.models.run import Run, RunStatus
from app.db.models.runner_heartbeat import runner_heartbeats
from app.db.models.schedule import Schedule
from app.db.models.task import Task
from app.db.models.thread import Thread
from app.db.models.thread_message import ThreadMessage
from app.db.models.user import User

__all__ = (
    "Agent",
    "ApiToken",
    "Attachment",
    "Device",
    "LiveActivity",
    "LiveActivityStartToken",
    "McpConnection",
    "McpOAuthState",
    "Memory",
    "PushDelivery",
    "PushEvent",
    "Run",
    "RunStatus",
    "Schedule",
    "Task",
    "Thread",
    "ThreadMessage",
    "User",
    "memory_vector_versions",
    "memory_vectors",
    "push_presence",
    "runner_heartbeats",
)
