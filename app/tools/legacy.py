"""Legacy one-action tool names and the domain tools that replaced them.

An agent's `enabled_tools` may hold either: a legacy name stands for its domain tool
(`create_task` enables `tasks`), so `litestar tools consolidate --reverse` (for a rollback
to a release that knows only legacy names) leaves every agent's effective tools as they
were. The model only ever sees and calls domain tools.
"""

from __future__ import annotations

from collections.abc import Iterable

# Domain tool -> the legacy names it replaced; the first ones are what --reverse restores.
LEGACY_TOOLS: dict[str, tuple[str, ...]] = {
    "tasks": ("create_task", "update_task", "complete_task", "list_tasks"),
    "web": ("web_search", "web_fetch"),
    "memory": ("save_memory", "recall_memory", "search_memory", "forget_memory"),
    "self_authoring": ("view_system_prompt", "update_system_prompt"),
}
# Further legacy spellings seen in the wild: consolidated, never restored.
EXTRA_LEGACY: dict[str, str] = {
    "view_agent_config": "self_authoring",
    "update_agent_name": "self_authoring",
    "view_reflection_prompt": "self_authoring",
    "update_reflection_prompt": "self_authoring",
    "view_memory_reflection_prompt": "self_authoring",
    "update_memory_reflection_prompt": "self_authoring",
    "WebSearchTool": "web",
    "WebFetchTool": "web",
    "ViewSystemPromptTool": "self_authoring",
    "UpdateSystemPromptTool": "self_authoring",
}
TO_DOMAIN: dict[str, str] = {
    **{legacy: domain for domain, names in LEGACY_TOOLS.items() for legacy in names},
    **EXTRA_LEGACY,
}


def domain_names(names: Iterable[str]) -> set[str]:
    """The tools `names` enable: each legacy name read as its domain tool."""
    return {TO_DOMAIN.get(name, name) for name in names}
