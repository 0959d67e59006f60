from __future__ import annotations

from uuid import UUID

import msgspec
from litestar import get, patch, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.agents import services
from app.agents.schemas import AgentCreate, AgentList, AgentRead, AgentUpdate
from app.agents.serializers import agent_read
from app.db.models import User
from app.lib.problems import problems


class AgentController(SignedInController):
    path = "/api/agents"
    tags = ["agents"]

    @get("/", operation_id="ListAgents", responses=problems())
    async def list_agents(self, db_session: AsyncSession, current_user: User) -> AgentList:
        """Your agents and the ones staff shared."""
        agents = await services.list_agents(db_session, current_user)
        specialists = await services.specialists_of(db_session, current_user)
        return AgentList(items=[agent_read(a, specialists) for a in agents])

    @post("/", operation_id="CreateAgent", responses=problems(409))
    async def create_agent(
        self, data: AgentCreate, db_session: AsyncSession, current_user: User
    ) -> AgentRead:
        agent = await services.create_agent(
            db_session, current_user, **msgspec.structs.asdict(data)
        )
        return agent_read(agent, await services.specialists_of(db_session, current_user))

    @get("/{agent_id:uuid}", operation_id="GetAgent", responses=problems(404))
    async def get_agent(
        self, agent_id: UUID, db_session: AsyncSession, current_user: User
    ) -> AgentRead:
        agent = await services.get_visible_agent(db_session, current_user, agent_id)
        return agent_read(agent, await services.specialists_of(db_session, current_user))

    @patch("/{agent_id:uuid}", operation_id="UpdateAgent", responses=problems(404, 409))
    async def update_agent(
        self,
        agent_id: UUID,
        data: AgentUpdate,
        db_session: AsyncSession,
        current_user: User,
    ) -> AgentRead:
        """Change only the fields sent; shared agents can be changed by their owner only."""
        agent = await services.get_owned_agent(db_session, current_user, agent_id)
        changes = data.sent_fields()
        agent = await services.update_agent(db_session, agent, changes)
        return agent_read(agent, await services.specialists_of(db_session, current_user))
