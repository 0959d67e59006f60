"""Tool instances: a registered tool under a name of its own, with options, declared in
the agent-types file (`tool_instances:`), e.g. two `web` tools searching different
services or keeping different numbers of results.

    tool_instances:
      web_news: {tool: web, description: "Search the news.",
                 options: {search_url: "https://news.example/search", result_limit: 3}}

The registry finds them through this source (like MCP tools), so they are validated,
offered, listed in GET /api/tools and run like the tool they configure.
"""

from __future__ import annotations

from app.tools.base import Tool
from app.tools.runtime.registry import ToolRegistry
from app.tools.runtime.toolsets import AgentTypesError, ToolInstanceSpec, tool_instances


class ConfiguredTools:
    """A `ToolSource` of the agent-types file's instances, rebuilt when the file is."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._generation = 0
        self._specs: dict[str, ToolInstanceSpec] | None = None
        self._built: dict[str, Tool] = {}

    @property
    def generation(self) -> int:
        self._current()
        return self._generation

    def get(self, name: str) -> Tool | None:
        return self._current().get(name)

    def tools(self) -> list[Tool]:
        return list(self._current().values())

    def check(self) -> None:
        """Build them now: a bad option stops startup with a clear message."""
        self._current()

    def _current(self) -> dict[str, Tool]:
        specs = tool_instances()
        if specs is not self._specs:
            self._built = self._build(specs)
            self._specs, self._generation = specs, self._generation + 1
        return self._built

    def _build(self, specs: dict[str, ToolInstanceSpec]) -> dict[str, Tool]:
        tools = {tool.name: tool for tool in self.registry.tools()}  # registered ones only
        built: dict[str, Tool] = {}
        for name, spec in specs.items():
            try:
                built[name] = tools[spec.tool].configured(name, spec.description, spec.options)
            except (KeyError, ValueError) as exc:
                raise AgentTypesError(f"tool instance {name!r}: {exc}") from None
        return built


def install(registry: ToolRegistry) -> None:
    """Add the instances to `registry` once (create_app calls it at every start)."""
    if not any(isinstance(s, ConfiguredTools) for s in registry.sources()):
        registry.add_source(ConfiguredTools(registry))
    for source in registry.sources():
        if isinstance(source, ConfiguredTools):
            source.check()
