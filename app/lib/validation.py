"""Every invalid field of a request body, not only the first.

msgspec stops at the first error it meets, so Litestar's validation problem names one
field. When a body fails, it is validated again field by field against its Struct (each
field in a one-field Struct of its own, so defaults, UNSET and constraints behave exactly
as in the real Struct) to report each bad field at once.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import msgspec

# "Expected `str` of length <= 100 - at `$.name[0]`" -> message, path after `$.name`.
_AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `\$\.[^.\[`]+(?P<rest>[^`]*)`)?$", re.DOTALL)
# msgspec's wording for `Meta(tz=True)`; said plainly, as the field's rule.
_FRIENDLIER = {"Expected `datetime` with a timezone component": "must include a timezone"}


def friendly_message(message: str) -> str:
    return _FRIENDLIER.get(message, message)


@cache
def _one_field_struct(struct_type: type[msgspec.Struct], name: str) -> type[msgspec.Struct]:
    field = next(f for f in msgspec.structs.fields(struct_type) if f.name == name)
    return msgspec.defstruct(f"{struct_type.__name__}_{name}", [(name, field.type)], kw_only=True)


def _field_error(field: msgspec.structs.FieldInfo, struct_type: type, value: Any) -> dict | None:
    try:
        msgspec.convert(
            {field.name: value}, _one_field_struct(struct_type, field.name), strict=True
        )
    except msgspec.ValidationError as exc:
        match = _AT_PATH.match(str(exc))
        message, rest = (match["message"], match["rest"] or "") if match else (str(exc), "")
        return {"key": field.encode_name + rest, "message": friendly_message(message)}
    return None


def struct_field_errors(struct_type: type[msgspec.Struct], raw: Any) -> list[dict[str, str]]:
    """Each invalid, missing or unknown field of `raw` (decoded JSON) for `struct_type`,
    as Litestar's error messages (`key`, `message`, `source`)."""
    if not isinstance(raw, dict):
        return []
    fields = msgspec.structs.fields(struct_type)
    errors: list[dict[str, str]] = []
    for field in fields:
        if field.encode_name not in raw:
            if field.required:
                errors.append(
                    {"key": field.encode_name, "message": "Object missing required field"}
                )
            continue
        if error := _field_error(field, struct_type, raw[field.encode_name]):
            errors.append(error)
    if struct_type.__struct_config__.forbid_unknown_fields:
        known = {field.encode_name for field in fields}
        errors.extend(
            {"key": str(key), "message": "Object contains unknown field"}
            for key in raw
            if key not in known
        )
    return [{**error, "source": "body"} for error in errors]
