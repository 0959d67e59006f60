"""Application factory: routes, plugins, dependencies and OpenAPI."""

from __future__ import annotations

from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme

from app.accounts.controllers import AuthController, MeController
from app.accounts.deps import BEARER_SCHEME, provide_current_user
from app.accounts.throttle import LoginThrottlePlugin
from app.accounts.token_cache import TokenCache
from app.agents.controllers import AgentController
from app.agents.delegates import provide_specialist_tools
from app.attachments.controllers import attachment_controller
from app.attachments.lifecycle import AttachmentExpiry
from app.attachments.storage import Storage, storage_for
from app.cli.plugin import CLIPlugin
from app.connections.controllers import McpOAuthCallbackController, McpServerController
from app.connections.credentials import VaultCredentials
from app.connections.startup import PerUserServers
from app.db.config import build_sqlalchemy_config
from app.db.lane import lane_lifespan
from app.db.schema import schema_lifespan
from app.db.session import session_dependency
from app.devices.controllers import DeviceController
from app.docs_ui import ASYNCAPI_PATH, asyncapi_document, docs_assets, swagger_plugin
from app.lib.allow_header import AllowHeaderMiddleware
from app.lib.head_requests import answer_head_as_get
from app.lib.health import health, readiness
from app.lib.heap import freeze_startup_heap
from app.lib.openapi import SwiftReadyOpenAPIConfig
from app.lib.openapi_plugins import (
    AlwaysSentStructSchemaPlugin,
    OmittedNullStructSchemaPlugin,
    OptionalLiteralSchemaPlugin,
    StrictStructSchemaPlugin,
)
from app.lib.problems import problem_details_plugin
from app.lib.requests import ApiRequest
from app.lib.security import add_security_headers
from app.memories.controllers import MemoryController
from app.memories.embedding import Embedder
from app.memories.keeper import MemoryVectorKeeper
from app.observability.plugin import observability_plugins
from app.openai_compat.agent import AgentRunController
from app.openai_compat.controllers import OpenAIController
from app.orchestrator.plugin import OrchestratorPlugin
from app.orchestrator.waits.controllers import WaitAnswerController
from app.push.controllers import LiveActivityController
from app.push.plugin import PushPlugin
from app.realtime.channels import RealtimeChannels
from app.realtime.socket import realtime_socket
from app.schedules.controllers import ScheduleController
from app.settings import Settings, get_settings
from app.tasks.controllers import TaskController
from app.threads import run_metrics
from app.threads.branch_controllers import BranchController
from app.threads.controllers import ThreadController
from app.threads.message_controllers import MessageController
from app.threads.run_controllers import RunController
from app.timers.plugin import TimersPlugin
from app.tools.assembly import get_registry
from app.tools.controllers import ToolController
from app.tools.mcp.credentials import CREDENTIALS
from app.tools.mcp.plugin import McpPlugin
from app.tools.runtime import instances as tool_instances
from app.tools.runtime.toolsets import install_tool_actions, load_agent_types
from app.usage.controllers import UsageController

# Every route of the app, in one place.
ROUTES = [
    health,
    readiness,
    AuthController,
    MeController,
    UsageController,
    AgentController,
    ThreadController,
    MessageController,
    BranchController,
    WaitAnswerController,
    RunController,
    TaskController,
    ScheduleController,
    MemoryController,
    DeviceController,
    LiveActivityController,
    realtime_socket,
    ToolController,
    McpServerController,
    McpOAuthCallbackController,
    OpenAIController,
    AgentRunController,
    docs_assets,
    asyncapi_document,
]


def openapi_config() -> OpenAPIConfig:
    # Imported here: `python -m app.realtime.asyncapi` imports this module first.
    from app.realtime.asyncapi import frame_components

    return SwiftReadyOpenAPIConfig(
        title="Toolcells API",
        version="1.0.0",
        description=(
            "Agent threads whose tool calls stream to the phone as live cells. "
            f"The websocket protocol of `/api/ws`: [AsyncAPI document]({ASYNCAPI_PATH})."
        ),
        path="/schema",
        render_plugins=[JsonRenderPlugin(), swagger_plugin()],
        components=Components(
            security_schemes={
                BEARER_SCHEME: SecurityScheme(type="http", scheme="bearer", bearer_format="token")
            }
        ),
        use_handler_docstrings=True,
        create_examples=False,
        # The frames, and a cell's `data` union `ToolData` with every result type.
        extra_schemas=frame_components(),
    )


def _actions_of(name: str) -> list[str] | None:
    tool = get_registry().get(name)
    return list(tool.actions) if tool is not None else None


def provider_embedder(settings: Settings) -> Embedder | None:
    """A provider's embedding model for memories, when MEMORY_EMBEDDINGS names one (the
    model door is imported only then: litellm's import is slow)."""
    if settings.memory_embeddings in ("embedded", "off"):
        return None
    from app.orchestrator.door.embeddings import configured_embedder

    return configured_embedder(settings)


def provide_settings(state: State) -> Settings:
    return state.settings


def provide_attachment_storage(state: State) -> Storage:
    return state.attachment_storage


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or get_settings()
    # Validate agent types and toolsets now: a bad YAML stops startup with a clear message.
    load_agent_types(settings.agent_types_file, tool_names=get_registry().names)
    tool_instances.install(get_registry())  # the file's configured tools (web_news, …)
    install_tool_actions(_actions_of)
    run_metrics.register()  # runs by final status and turn latency, from committed changes
    CREDENTIALS.plug(VaultCredentials())  # per-user MCP tokens, from the connections' vault
    db_config = build_sqlalchemy_config(settings)
    app = Litestar(
        route_handlers=[*ROUTES, attachment_controller(settings)],
        middleware=[AllowHeaderMiddleware()],  # Litestar 2's OPTIONS `Allow` (workaround)
        plugins=[
            SQLAlchemyPlugin(config=db_config),
            problem_details_plugin(),
            CLIPlugin(),
            LoginThrottlePlugin(settings),
            StrictStructSchemaPlugin(),
            OmittedNullStructSchemaPlugin(),
            AlwaysSentStructSchemaPlugin(),
            OptionalLiteralSchemaPlugin(),
            RealtimeChannels(settings, db_config),
            PushPlugin(settings, db_config),
            TimersPlugin(settings, db_config),  # after push: its reminders are pushes
            # memories' vectors, kept current (a provider's model through the door)
            MemoryVectorKeeper(settings, db_config, provider_embedder(settings)),
            AttachmentExpiry(settings, db_config),  # uploads no message referenced
            # remote MCP servers' tools (app/tools/mcp/); per-user ones: app/connections/
            McpPlugin(settings, get_registry(), on_catalog=[PerUserServers(settings, db_config)]),
            *observability_plugins(settings),  # request ids, logs, /metrics, traces
            OrchestratorPlugin(settings, db_config),  # last: its lifespan exits first
        ],
        dependencies={
            "settings": Provide(provide_settings, sync_to_thread=False),
            "attachment_storage": Provide(provide_attachment_storage, sync_to_thread=False),
            "current_user": Provide(provide_current_user),
            "specialist_tools": Provide(provide_specialist_tools),
            "db_session": session_dependency(db_config),
        },
        openapi_config=openapi_config(),
        # First: the schema before the runner touches tables; the lane's reads outlive
        # every plugin's work.
        lifespan=[schema_lifespan(settings), lane_lifespan(settings)],
        request_max_body_size=settings.max_request_body_bytes,
        request_class=ApiRequest,
        before_send=[add_security_headers],
        state=State(
            {
                "settings": settings,
                "attachment_storage": storage_for(settings),
                "token_cache": TokenCache(settings.auth_cache_seconds),
            }
        ),
        debug=False,
    )
    if settings.gc_freeze_after_startup:
        app.on_startup.append(freeze_startup_heap)  # last: after the plugins' startup
    return answer_head_as_get(app)  # HEAD on GET routes (Litestar 2 workaround)
