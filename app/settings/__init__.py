"""One frozen settings object, read from the environment once.

Every field is set by one environment variable: the field name upper-cased, or the name in
its `Meta(extra={"env": ...})` where an older documented name differs (`WS_IDLE_TIMEOUT`).
msgspec converts the text of each variable to the field's annotated type, bounds included;
an empty variable means the default. Booleans accept 1/0/true/false/yes/no, lists are
comma-separated. A bad value raises `SettingsError`, one line naming the variable.
A frozen dataclass (msgspec converts to it like to a Struct), so `Settings(...)` keywords
and `dataclasses.replace` copies work as before.

The fields are grouped by concern, one module each, a frozen dataclass of its fields and
the properties derived from them: database.py, accounts.py (tokens, login throttling,
proxies), models.py (model providers), runs.py (the run worker and the turn), tools.py
(tools and MCP), realtime.py (pub/sub, `/api/ws`), push.py, timers.py (reminders), memory.py
(embeddings), limits.py (request size, budgets), observability.py. `Settings` is all of them at once. A field is
`name: Annotated[type, Meta(description=...)] = default`, read from NAME; the type's bounds
are checked, and the table of docs/configuration.md is generated from these (in this
order: app/settings_docs.py). environment.py reads the variables; base.py holds the
bounds, the errors and `PROJECT_ROOT`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from app.settings.accounts import AccountSettings
from app.settings.attachments import AttachmentSettings
from app.settings.base import PROJECT_ROOT, SettingsError, StartupError
from app.settings.database import DEFAULT_SQLITE_PATH, DatabaseSettings
from app.settings.environment import Variable, values_from, variables_of
from app.settings.limits import LimitSettings
from app.settings.memory import MemorySettings
from app.settings.models import ModelSettings
from app.settings.observability import ObservabilitySettings
from app.settings.push import PushSettings
from app.settings.realtime import RealtimeSettings
from app.settings.runs import RunSettings
from app.settings.timers import TimerSettings
from app.settings.tools import ToolSettings

# Credentials: never shown by repr (a log line or a traceback that prints the settings).
SECRET_FIELDS = frozenset(
    {"llm_api_key", "mcp_token_key", "s3_access_key_id", "s3_secret_access_key"}
)


# The fields come in the reverse order of the bases (a dataclass collects them from its last
# base up): the table reads from the database to observability.
@dataclass(frozen=True)
class Settings(
    ObservabilitySettings,
    AttachmentSettings,
    LimitSettings,
    TimerSettings,
    MemorySettings,
    PushSettings,
    RealtimeSettings,
    ToolSettings,
    RunSettings,
    ModelSettings,
    AccountSettings,
    DatabaseSettings,
):
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment gives; all bad variables reported in one line."""
        return cls(**values_from(variables(), os.environ if environ is None else environ))

    def __repr__(self) -> str:
        def shown(name: str) -> str:
            value = getattr(self, name)
            return "'***'" if name in SECRET_FIELDS and value else repr(value)

        fields = (f"{f.name}={shown(f.name)}" for f in dataclasses.fields(self))
        return f"Settings({', '.join(fields)})"


@lru_cache(maxsize=1)
def variables() -> tuple[Variable, ...]:
    """Every Settings field as its environment variable, in declaration order."""
    return variables_of(Settings)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()


__all__ = (
    "DEFAULT_SQLITE_PATH",
    "PROJECT_ROOT",
    "Settings",
    "SettingsError",
    "StartupError",
    "Variable",
    "get_settings",
    "variables",
)
