"""polyfactory factories for rows and request bodies."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

from polyfactory import Use
from polyfactory.factories.msgspec_factory import MsgspecFactory
from polyfactory.factories.sqlalchemy_factory import SQLAlchemyFactory

from app.agents.schemas import AgentCreate
from app.db.models import Agent, ApiToken, Task, Thread, User
from app.lib.security import hash_password
from app.lib.time import utcnow
from app.threads.schemas import MessageCreate

TEST_PASSWORD = "correct horse battery staple"
_TEST_PASSWORD_HASH = hash_password(TEST_PASSWORD)


class UserFactory(SQLAlchemyFactory[User]):
    __set_relationships__ = False
    __check_model__ = False
    id = Use(uuid4)
    email = Use(lambda: f"user-{uuid4().hex[:12]}@example.com")
    password_hash = _TEST_PASSWORD_HASH
    display_name = None
    is_staff = False


class ApiTokenFactory(SQLAlchemyFactory[ApiToken]):
    __set_relationships__ = False
    __check_model__ = False
    id = Use(uuid4)
    expires_at = Use(lambda: utcnow() + timedelta(days=1))
    revoked_at = None


class AgentFactory(SQLAlchemyFactory[Agent]):
    __set_relationships__ = False
    __check_model__ = False
    id = Use(uuid4)
    name = Use(lambda: f"agent-{uuid4().hex[:8]}")
    agent_type = "assistant"
    model = None
    system_prompt = "You are a test agent."
    reflection_prompt = None
    memory_reflection_prompt = None
    enabled_tools = None
    is_shared = False


class ThreadFactory(SQLAlchemyFactory[Thread]):
    __set_relationships__ = False
    __check_model__ = False
    id = Use(uuid4)
    title = Use(lambda: f"thread {uuid4().hex[:6]}")
    last_seq = 0
    message_count = 0
    last_activity_at = Use(utcnow)


class TaskFactory(SQLAlchemyFactory[Task]):
    __set_relationships__ = False
    __check_model__ = False
    id = Use(uuid4)
    status = "active"
    notes = None
    due_at = None
    completed_at = None
    remind_before_seconds = None
    remind_at = None
    reminded_at = None
    agent_id = None
    thread_id = None


class AgentCreateFactory(MsgspecFactory[AgentCreate]):
    name = Use(lambda: f"agent-{uuid4().hex[:8]}")
    agent_type = "assistant"
    enabled_tools = None


class MessageCreateFactory(MsgspecFactory[MessageCreate]):
    content = Use(lambda: f"hello {uuid4().hex[:6]}")
    client_message_id = None
    tools = None
    tool_calls = None
