"""Agent types and their toolsets, declared in agent_types.yaml and validated at startup.

The effective toolset of an agent is its type's toolset narrowed by its enabled_tools.
The file also declares device tools (run by the phone, app/tools/device.py): a toolset
may name them like any registered tool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml  # type: ignore[import-untyped]

from app.settings import StartupError
from app.tools.device import DeviceToolSpec, declaration_problem
from app.tools.mcp_config import McpServerSpec
from app.tools.mcp_config import declaration_problem as mcp_declaration_problem
from app.tools.runtime.legacy import allowed_actions, domain_names, split_entry

DEFAULT_AGENT_TYPES_FILE = Path(__file__).parent.parent / "agent_types.yaml"


class AgentTypesError(StartupError):
    """The agent types file is invalid; the message says where and how."""


# How long an approval waits: seconds (up to 90 days), or "until_answered" (no expiry).
ApprovalWait = Annotated[float, msgspec.Meta(gt=0, le=90 * 86400)] | Literal["until_answered"]


class AgentTypeConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = ""
    description: str = ""
    tools: list[str]
    step_limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    tool_call_budget: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 30
    double_texting: Literal["queue", "reject"] = "queue"
    delegation: bool = False
    run_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 300
    planner: bool = False  # plan first (a strict JSON plan), then run the plan's steps
    # The top N memories about the user's latest message go into the context (0: off).
    memory_recall: Annotated[int, msgspec.Meta(ge=0, le=10)] = 0
    # MCP servers (the file's `mcp_servers:`) whose tools join this type's toolset
    mcp_servers: list[str] = []
    # How long this type's approvals wait (unset: APPROVAL_TTL_SECONDS), and per tool.
    approval_wait: ApprovalWait | None = None
    approval_waits: dict[str, ApprovalWait] = {}

    def approval_wait_seconds(self, tool: str, default: float) -> float:
        """Seconds an approval of `tool` waits; infinite: until answered."""
        wait = self.approval_waits.get(tool, self.approval_wait)
        if wait is None:
            return default
        return math.inf if wait == "until_answered" else float(wait)


ToolName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class ToolInstanceSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A registered tool under a name of its own, with options (`tool_instances:`): e.g.
    two `web` tools searching different services. The tool checks `options`
    (`Tool.configured`); toolsets name the instance like any tool."""

    tool: str
    description: str | None = None  # what the model reads; unset: the tool's own
    options: dict[str, object] = {}
    name: str = ""


class _AgentTypesFile(msgspec.Struct, forbid_unknown_fields=True):
    agent_types: dict[str, AgentTypeConfig]
    device_tools: dict[str, DeviceToolSpec] = {}
    mcp_servers: dict[str, McpServerSpec] = {}
    tool_instances: dict[ToolName, ToolInstanceSpec] = {}


def _read_file(text: str, source: str) -> _AgentTypesFile:
    try:
        raw = yaml.safe_load(text)
        parsed = msgspec.convert(raw, _AgentTypesFile, strict=True)
    except yaml.YAMLError as exc:
        raise AgentTypesError(f"{source}: not valid YAML: {exc}") from None
    except msgspec.ValidationError as exc:
        raise AgentTypesError(f"{source}: {exc}") from None
    if not parsed.agent_types:
        raise AgentTypesError(f"{source}: declares no agent types.")
    return parsed


def parse_device_tools(
    text: str, registered_tools: list[str], source: str = "agent_types.yaml"
) -> dict[str, DeviceToolSpec]:
    """The file's device tools, checked: valid names and schemas, no clash with a registered tool."""
    tools: dict[str, DeviceToolSpec] = {}
    for name, spec in _read_file(text, source).device_tools.items():
        spec = msgspec.structs.replace(spec, name=name)
        problem = declaration_problem(spec)
        if problem is None and name in registered_tools:
            problem = f"device tool {name!r} has the name of a server tool"
        if problem is not None:
            raise AgentTypesError(f"{source}: {problem}.")
        tools[name] = spec
    return tools


def parse_mcp_servers(text: str, source: str = "agent_types.yaml") -> dict[str, McpServerSpec]:
    """The file's MCP servers, checked: names, URLs, headers naming environment variables."""
    servers: dict[str, McpServerSpec] = {}
    for name, spec in _read_file(text, source).mcp_servers.items():
        spec = msgspec.structs.replace(spec, name=name)
        if (problem := mcp_declaration_problem(spec)) is not None:
            raise AgentTypesError(f"{source}: {problem}.")
        servers[name] = spec
    return servers


def parse_tool_instances(
    text: str, registered_tools: list[str], source: str = "agent_types.yaml"
) -> dict[str, ToolInstanceSpec]:
    """The file's tool instances, checked: each configures a registered tool under a new
    name (their options are the tool's to check, when the registry builds them)."""
    instances: dict[str, ToolInstanceSpec] = {}
    for name, spec in _read_file(text, source).tool_instances.items():
        if name in registered_tools:
            raise AgentTypesError(f"{source}: tool instance {name!r} has the name of a tool.")
        if spec.tool not in registered_tools:
            raise AgentTypesError(
                f"{source}: tool instance {name!r} configures unknown tool {spec.tool!r}; "
                f"known tools: {', '.join(registered_tools)}."
            )
        instances[name] = msgspec.structs.replace(spec, name=name)
    return instances


def parse_agent_types(
    text: str, known_tools: list[str], source: str = "agent_types.yaml"
) -> dict[str, AgentTypeConfig]:
    """The file's agent types; their toolsets may name `known_tools` (server and device)."""
    parsed = _read_file(text, source)
    types: dict[str, AgentTypeConfig] = {}
    for name, config in parsed.agent_types.items():
        undeclared = [s for s in config.mcp_servers if s not in parsed.mcp_servers]
        if undeclared:
            raise AgentTypesError(
                f"{source}: agent type {name!r} lists undeclared MCP server(s) "
                f"{', '.join(map(repr, undeclared))}; declared: {', '.join(parsed.mcp_servers) or 'none'}."
            )
        unknown = [t for t in config.tools if t not in known_tools]
        if unknown:
            raise AgentTypesError(
                f"{source}: agent type {name!r} lists unknown tool(s) {', '.join(map(repr, unknown))}; "
                f"known tools: {', '.join(known_tools)}."
            )
        if len(set(config.tools)) != len(config.tools):
            raise AgentTypesError(f"{source}: agent type {name!r} lists a tool twice.")
        types[name] = msgspec.structs.replace(config, name=name)
    return types


def load_agent_types(
    path: Path | str | None = None, tool_names: ToolNames | None = None
) -> dict[str, AgentTypeConfig]:
    """Read, validate and install the agent types (called by create_app at startup).

    `tool_names` gives the registered tool names; the composition root passes the
    registry's, so this module (and the domain services that ask it which tools exist)
    never imports the builtin tools. Later calls reuse the one given first.
    """
    global _AGENT_TYPES, _TOOL_NAMES, _DEVICE_TOOLS, _MCP_SERVERS, _TOOL_INSTANCES
    if tool_names is not None:
        _TOOL_NAMES = tool_names
    file = Path(path) if path else DEFAULT_AGENT_TYPES_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentTypesError(f"Cannot read agent types file {file}: {exc.strerror}") from None
    registered = _registered_tool_names()
    devices = parse_device_tools(text, registered, source=str(file))
    instances = parse_tool_instances(text, registered + list(devices), source=str(file))
    known = registered + list(devices) + list(instances)
    types = parse_agent_types(text, known, source=str(file))
    servers = parse_mcp_servers(text, source=str(file))
    _AGENT_TYPES, _DEVICE_TOOLS, _MCP_SERVERS = types, devices, servers
    _TOOL_INSTANCES = instances
    return types


ToolNames = Callable[[], Iterable[str]]
ToolActions = Callable[[str], list[str] | None]  # a registered tool's actions (None: unknown)
_TOOL_ACTIONS: ToolActions | None = None
McpToolNames = Callable[[str], list[str]]  # server name -> its tools' names right now
_AGENT_TYPES: dict[str, AgentTypeConfig] | None = None
_DEVICE_TOOLS: dict[str, DeviceToolSpec] = {}
_MCP_SERVERS: dict[str, McpServerSpec] = {}
_TOOL_INSTANCES: dict[str, ToolInstanceSpec] = {}
_TOOL_NAMES: ToolNames | None = None
_MCP_TOOL_NAMES: McpToolNames | None = None


def install_mcp_tool_names(names: McpToolNames | None) -> None:
    """Set by the MCP catalog at startup (app/tools/mcp/plugin.py): which tools each server
    offers now. Unset (or a server unreachable): its tools are in no toolset."""
    global _MCP_TOOL_NAMES
    _MCP_TOOL_NAMES = names


def uninstall_mcp_tool_names(names: McpToolNames) -> None:
    """A catalog that stops forgets its names, unless another app's catalog (tests run
    several apps in one process) installed its own since."""
    global _MCP_TOOL_NAMES
    if names == _MCP_TOOL_NAMES:
        _MCP_TOOL_NAMES = None


def mcp_servers() -> dict[str, McpServerSpec]:
    """The declared MCP servers by name (empty until the agent-types file is loaded)."""
    agent_types()
    return _MCP_SERVERS


def mcp_tool_names(server: str) -> list[str]:
    return _MCP_TOOL_NAMES(server) if _MCP_TOOL_NAMES is not None else []


def _all_mcp_tool_names() -> list[str]:
    return [name for server in mcp_servers() for name in mcp_tool_names(server)]


def _registered_tool_names() -> list[str]:
    if _TOOL_NAMES is None:
        raise AgentTypesError(
            "The tool names are not known yet: create_app passes them to load_agent_types."
        )
    return list(_TOOL_NAMES())


def tool_instances() -> dict[str, ToolInstanceSpec]:
    """The declared tool instances by name (empty until the agent-types file is loaded)."""
    agent_types()
    return _TOOL_INSTANCES


def known_tool_names() -> list[str]:
    """Every tool an agent may list in enabled_tools: registered (server), configured
    instances, device and MCP tools."""
    agent_types()  # device tools are known once the file is read
    registered = _registered_tool_names()
    instances = [name for name in _TOOL_INSTANCES if name not in registered]
    return registered + instances + list(_DEVICE_TOOLS) + _all_mcp_tool_names()


def device_tools() -> dict[str, DeviceToolSpec]:
    """The declared device tools by name (empty until the agent-types file is loaded)."""
    agent_types()
    return _DEVICE_TOOLS


def get_device_tool(name: str) -> DeviceToolSpec | None:
    return device_tools().get(name)


def is_enableable_tool_name(name: str) -> bool:
    """What enabled_tools may hold: a registered tool, one action of it (`tasks.list`), or
    a legacy name of one."""
    if name in known_tool_names():
        return True
    tool, action = split_entry(name)
    if tool not in known_tool_names():
        return False
    actions = _TOOL_ACTIONS(tool) if _TOOL_ACTIONS is not None else None
    return action is None or actions is None or action in actions


def install_tool_actions(actions: ToolActions | None) -> None:
    """Set by create_app: a registered tool's actions (to check `tasks.list` entries)."""
    global _TOOL_ACTIONS
    _TOOL_ACTIONS = actions


def action_limits(agent_type: str, enabled_tools: list[str] | None) -> dict[str, frozenset[str]]:
    """Per effective tool the agent may use for some actions only (enabled_tools name
    `tasks.list` or `list_tasks`, not `tasks`), those actions."""
    if enabled_tools is None:
        return {}
    offered = set(effective_tools(agent_type, enabled_tools))
    return {t: a for t, a in allowed_actions(enabled_tools).items() if t in offered}


def agent_types() -> dict[str, AgentTypeConfig]:
    return _AGENT_TYPES if _AGENT_TYPES is not None else load_agent_types()


def get_agent_type(name: str) -> AgentTypeConfig | None:
    return agent_types().get(name)


def agent_type_names() -> list[str]:
    return list(agent_types())


def is_known_agent_type(name: str) -> bool:
    return name in agent_types()


def effective_tools(agent_type: str, enabled_tools: list[str] | None) -> list[str]:
    """The type's toolset ∩ enabled_tools (None: everything the type offers), in type order.
    A legacy name in enabled_tools (`create_task`) enables its domain tool (`tasks`)."""
    config = get_agent_type(agent_type)
    if config is None:
        return []
    offered = type_tools(config)
    if enabled_tools is None:
        return offered
    enabled = domain_names(enabled_tools)
    return [name for name in offered if name in enabled]


def type_tools(config: AgentTypeConfig) -> list[str]:
    """The type's toolset: its tools, then the tools its MCP servers offer now."""
    return list(config.tools) + [n for s in config.mcp_servers for n in mcp_tool_names(s)]


def agent_types_offering(tool_name: str) -> list[str]:
    return [name for name, config in agent_types().items() if tool_name in type_tools(config)]
