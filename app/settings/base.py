"""What every group of settings uses: the repository's root, the bounds msgspec checks
when it converts an environment value, and the errors that stop the server in one line."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta

# app/settings/base.py -> the checkout
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Bounds msgspec checks when it converts an environment value.
PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegativeFloat = Annotated[float, Meta(ge=0)]


class StartupError(Exception):
    """A configuration problem that stops the server; its message alone (one line) tells
    the operator what to fix, so it is printed without a traceback."""


class SettingsError(StartupError, ValueError):
    """A bad environment value; the message is one line for whoever starts the server."""


def _one_line_settings_errors(hook: Callable[..., Any]) -> Callable[..., Any]:
    """`litestar run` builds the app while it parses its command line, outside any handler of
    ours, so a bad setting (or agent types file) reaches the interpreter uncaught: print its
    message alone (the exit code stays 1) instead of a traceback that buries it."""

    def excepthook(
        exc_type: type[BaseException], exc: BaseException, tb: types.TracebackType | None
    ) -> None:
        if isinstance(exc, StartupError):
            print(exc, file=sys.stderr)
        else:
            hook(exc_type, exc, tb)

    return excepthook


sys.excepthook = _one_line_settings_errors(sys.excepthook)
