"""Legacy one-action tool names and the domain tools that replaced them.

An agent's `enabled_tools` may hold a domain tool (`tasks`: every action), one action of
it (`tasks.list`), or a legacy name, which stands for that one action of its domain tool
(`list_tasks` is `tasks.list`). So `litestar tools consolidate` keeps action-level
permissions and `--reverse` (for a rollback to a release that knows only legacy names)
restores them. The model only ever sees and calls domain tools.
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
# The one action of its domain tool each legacy name allowed (memory's legacy names
# spoke of the memory tool as a whole: recall_memory/search_memory were one feature).
LEGACY_ACTION: dict[str, str] = {
    "create_task": "create", "update_task": "update", "complete_task": "complete",
    "list_tasks": "list", "web_search": "search", "web_fetch": "fetch",
    "WebSearchTool": "search", "WebFetchTool": "fetch",
    "save_memory": "save", "recall_memory": "recall", "search_memory": "search",
    "forget_memory": "forget",
    "view_system_prompt": "view", "update_system_prompt": "update",
    "ViewSystemPromptTool": "view", "UpdateSystemPromptTool": "update",
    "view_agent_config": "view", "update_agent_name": "update",
    "view_reflection_prompt": "view", "update_reflection_prompt": "update",
    "view_memory_reflection_prompt": "view", "update_memory_reflection_prompt": "update",
}  # fmt: skip
ACTION_SEPARATOR = "."


def split_entry(name: str) -> tuple[str, str | None]:
    """An enabled_tools entry as (domain tool, its one allowed action or None: all):
    `tasks` -> (tasks, None), `tasks.list` and `list_tasks` -> (tasks, list)."""
    if name in TO_DOMAIN:
        return TO_DOMAIN[name], LEGACY_ACTION.get(name)
    tool, sep, action = name.partition(ACTION_SEPARATOR)
    return (tool, action) if sep and action else (name, None)


def domain_names(names: Iterable[str]) -> set[str]:
    """The tools `names` enable: each legacy name or `tool.action` read as its tool."""
    return {split_entry(name)[0] for name in names}


def allowed_actions(names: Iterable[str]) -> dict[str, frozenset[str]]:
    """Per tool enabled for some actions only, those actions (a tool enabled whole, or
    not named, is absent: every action of it is allowed)."""
    whole: set[str] = set()
    some: dict[str, set[str]] = {}
    for name in names:
        tool, action = split_entry(name)
        if action is None:
            whole.add(tool)
        else:
            some.setdefault(tool, set()).add(action)
    return {tool: frozenset(actions) for tool, actions in some.items() if tool not in whole}
