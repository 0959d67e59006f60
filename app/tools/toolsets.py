"""Agent types and their toolsets, declared in agent_types.yaml and validated at startup.

The effective toolset of an agent is its type's toolset narrowed by its enabled_tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml  # type: ignore[import-untyped]

DEFAULT_AGENT_TYPES_FILE = Path(__file__).with_name("agent_types.yaml")


class AgentTypesError(RuntimeError):
    """The agent types file is invalid; the message says where and how."""


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


class _AgentTypesFile(msgspec.Struct, forbid_unknown_fields=True):
    agent_types: dict[str, AgentTypeConfig]


def parse_agent_types(
    text: str, known_tools: list[str], source: str = "agent_types.yaml"
) -> dict[str, AgentTypeConfig]:
    try:
        raw = yaml.safe_load(text)
        parsed = msgspec.convert(raw, _AgentTypesFile, strict=True)
    except yaml.YAMLError as exc:
        raise AgentTypesError(f"{source}: not valid YAML: {exc}") from None
    except msgspec.ValidationError as exc:
        raise AgentTypesError(f"{source}: {exc}") from None
    if not parsed.agent_types:
        raise AgentTypesError(f"{source}: declares no agent types.")
    types: dict[str, AgentTypeConfig] = {}
    for name, config in parsed.agent_types.items():
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
    global _AGENT_TYPES, _TOOL_NAMES
    if tool_names is not None:
        _TOOL_NAMES = tool_names
    file = Path(path) if path else DEFAULT_AGENT_TYPES_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentTypesError(f"Cannot read agent types file {file}: {exc.strerror}") from None
    types = parse_agent_types(text, known_tool_names(), source=str(file))
    _AGENT_TYPES = types
    return types


ToolNames = Callable[[], Iterable[str]]
_AGENT_TYPES: dict[str, AgentTypeConfig] | None = None
_TOOL_NAMES: ToolNames | None = None


def known_tool_names() -> list[str]:
    """The registered tools' names (what enabled_tools and agent types may list)."""
    if _TOOL_NAMES is None:
        raise AgentTypesError(
            "The tool names are not known yet: create_app passes them to load_agent_types."
        )
    return list(_TOOL_NAMES())


def agent_types() -> dict[str, AgentTypeConfig]:
    return _AGENT_TYPES if _AGENT_TYPES is not None else load_agent_types()


def get_agent_type(name: str) -> AgentTypeConfig | None:
    return agent_types().get(name)


def agent_type_names() -> list[str]:
    return list(agent_types())


def is_known_agent_type(name: str) -> bool:
    return name in agent_types()


def effective_tools(agent_type: str, enabled_tools: list[str] | None) -> list[str]:
    """The type's toolset ∩ enabled_tools (None: everything the type offers), in type order."""
    config = get_agent_type(agent_type)
    if config is None:
        return []
    if enabled_tools is None:
        return list(config.tools)
    return [name for name in config.tools if name in enabled_tools]


def agent_types_offering(tool_name: str) -> list[str]:
    return [name for name, config in agent_types().items() if tool_name in config.tools]
