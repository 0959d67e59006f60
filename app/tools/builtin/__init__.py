"""The builtin domain tools (registered in app/tools/runtime/registry.py)."""
