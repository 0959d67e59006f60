"""Network safety for tools that reach out (the web tool's fetch)."""
