"""Remote MCP servers as toolsets: each declared server's tools join agent types' toolsets
under namespaced names, and each call is a live cell like any tool's.

config.py    the `mcp_servers:` declaration of the agent-types file
naming.py    `<server>__<tool>` names that model providers accept
connect.py   one Streamable HTTP connection through the SDK's `Client` (headers, 401/403)
tool.py      `McpTool`: a remote tool as a `Tool` (its JSON Schema, its call, its result)
catalog.py   the cached `tools/list` of every server, refreshed on a TTL or `list_changed`
elicitation.py  a server's request for the user's input, as the cell's `awaiting_input`
connections.py / vault.py  users' own connections (tokens sealed with MCP_TOKEN_KEY)
oauth.py / oauth_discovery.py / oauth_tokens.py  connecting them through OAuth 2.1 + PKCE
demo_server.py / plugin.py  the bundled demo server and the app's lifespan
"""
