"""The app's request class: a JSON body that cannot be decoded is the client's error."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException
from litestar.types import Empty


class ApiRequest(Request[Any, Any, Any]):
    """Litestar turns `msgspec.DecodeError` into a 400, but msgspec raises
    `UnicodeDecodeError` for invalid UTF-8 inside a string and `RecursionError` for
    deeply nested arrays/objects; both would escape as 500s. Raising
    `SerializationException` instead makes Litestar answer 400 like any malformed body.
    """

    async def json(self) -> Any:
        try:
            return await super().json()
        except UnicodeDecodeError as exc:
            raise SerializationException("The request body is not valid UTF-8.") from exc
        except RecursionError as exc:
            raise SerializationException("The request body's JSON is nested too deeply.") from exc

    @property
    def decoded_json(self) -> Any:
        """The JSON body as already decoded for this request (shared through the ASGI
        scope, so a request built later for the exception handler sees it), or None."""
        value = self._connection_state.json
        return None if value is Empty else value
