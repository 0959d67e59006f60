"""The builtin domain tools (registered in app/tools/registry.py)."""
