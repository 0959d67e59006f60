"""The app's request class: a JSON body that cannot be decoded is the client's error, and
a body is held to its JSON types (no `0` for `false`, no `"5"` for `5`)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException, SerializationException, ValidationException
from litestar.types import Empty

# The dependency that authenticates a request (app/accounts/deps.py).
AUTH_DEPENDENCY = "current_user"
# Where `json()` keeps the decoded body in the request's state (the ASGI scope's "state",
# which every Request built on the same scope shares).
DECODED_JSON_KEY = "toolcells.decoded_json"


class ApiRequest(Request[Any, Any, Any]):
    """Litestar turns `msgspec.DecodeError` into a 400, but msgspec raises
    `UnicodeDecodeError` for invalid UTF-8 inside a string and `RecursionError` for
    deeply nested arrays/objects; both would escape as 500s. Raising
    `SerializationException` instead makes Litestar answer 400 like any malformed body.
    """

    async def json(self) -> Any:
        try:
            value = await super().json()
        except (SerializationException, msgspec.DecodeError):
            self.check_media_type()  # a form or text is the wrong kind of body, not bad JSON
            raise
        except UnicodeDecodeError as exc:
            raise SerializationException("The request body is not valid UTF-8.") from exc
        except RecursionError as exc:
            raise SerializationException("The request body's JSON is nested too deeply.") from exc
        self.state[DECODED_JSON_KEY] = value
        if AUTH_DEPENDENCY not in self.route_handler.parsed_fn_signature.parameters:
            self.check_body_types(value)
        return value

    def check_body_types(self, value: Any = Empty) -> None:
        """Litestar converts a body into the handler's Struct leniently (`strict=False`:
        `0` passes as `false`, `"5"` as `5`); the API's bodies are JSON with JSON's
        types, so a body the strict conversion refuses is a validation problem (every bad
        field is then listed by app/lib/problems.py). On a route that authenticates, the
        authentication calls this once the token is good: a bad token is a 401 first."""
        value = self.decoded_json if value is Empty else value
        if value is None:
            return
        data = self.route_handler.parsed_fn_signature.parameters.get("data")
        struct_type = data.annotation if data is not None else None
        if not (isinstance(struct_type, type) and issubclass(struct_type, msgspec.Struct)):
            return
        self.check_media_type()
        try:
            msgspec.convert(value, struct_type, strict=True)
        except msgspec.ValidationError as exc:
            raise ValidationException(
                "Validation failed for the request body.",
                extra=[{"message": str(exc), "key": "body", "source": "body"}],
            ) from exc

    def check_media_type(self) -> None:
        """A body is JSON: one sent as another media type (a form, text) is a 415, so a
        client learns it sent the wrong thing rather than having it read as JSON. No
        `Content-Type` at all is read as JSON (clients that omit it)."""
        sent = self.headers.get("content-type")
        if sent is None:
            return
        media = sent.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise HTTPException(
                status_code=415,
                detail=f"The body must be JSON (Content-Type: application/json), not {media!r}.",
            )

    @property
    def decoded_json(self) -> Any:
        """The JSON body as already decoded for this request (shared through the ASGI
        scope, so a request built later for the exception handler sees it), or None."""
        return self.state.get(DECODED_JSON_KEY)
