"""Reading the settings from the environment: each field is one variable.

A field's variable is its name upper-cased, or the name in its `Meta(extra={"env": ...})`
where an older documented name differs (`WS_IDLE_TIMEOUT`). msgspec converts the text of
each variable to the field's annotated type, bounds included; an empty variable means the
default. Booleans accept 1/0/true/false/yes/no, lists are comma-separated.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from app.settings.base import SettingsError

_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"0", "false", "no"})


@dataclass(frozen=True)
class Variable:
    """One environment variable: the Settings field it sets and what it accepts."""

    name: str
    field: str
    annotation: Any  # the field's type with its bounds, for msgspec
    kind: msgspec.inspect.Type  # the same without metadata and `| None`
    description: str
    default: Any

    def parse(self, raw: str) -> Any:
        value: Any = raw
        if isinstance(self.kind, msgspec.inspect.BoolType):
            word = raw.strip().lower()
            value = True if word in _TRUE else False if word in _FALSE else raw
        elif isinstance(self.kind, _LIST_TYPES):
            value = [item.strip() for item in raw.split(",") if item.strip()]
        elif isinstance(self.kind, msgspec.inspect.LiteralType):
            value = raw.strip().lower()  # LOG_LEVEL=INFO as well as info
        return msgspec.convert(value, self.annotation, strict=False)

    def expected(self) -> str:
        """What the variable accepts, in words (error messages, docs/configuration.md)."""
        kind = self.kind
        if isinstance(kind, msgspec.inspect.BoolType):
            return "one of 1, 0, true, false, yes, no"
        if isinstance(kind, _LIST_TYPES):
            return "a comma-separated list"
        if isinstance(kind, msgspec.inspect.LiteralType):
            return "one of " + ", ".join(map(str, kind.values))
        if isinstance(kind, msgspec.inspect.IntType | msgspec.inspect.FloatType):
            number = "an integer" if isinstance(kind, msgspec.inspect.IntType) else "a number"
            bounds = [
                f"{op} {bound}"
                for op, bound in ((">", kind.gt), (">=", kind.ge), ("<", kind.lt), ("<=", kind.le))
                if bound is not None
            ]
            return " ".join([number, " and ".join(bounds)]).strip()
        if isinstance(kind, msgspec.inspect.StrType):
            return "text"
        if isinstance(kind, msgspec.inspect.LiteralType):
            return "one of " + ", ".join(sorted(str(value) for value in kind.values))
        return str(self.annotation)


_LIST_TYPES = (msgspec.inspect.VarTupleType, msgspec.inspect.ListType)


def variables_of(settings: type[Any]) -> tuple[Variable, ...]:
    """Every field of the `settings` dataclass as its environment variable, in declaration
    order. (Each group's annotations are strings, resolved in the module declaring them.)"""
    hints = typing.get_type_hints(settings, include_extras=True)
    return tuple(_variable(field, hints[field.name]) for field in dataclasses.fields(settings))


def _variable(field: dataclasses.Field[Any], annotation: Any) -> Variable:
    kind = msgspec.inspect.type_info(annotation)
    description, env = "", None
    if isinstance(kind, msgspec.inspect.Metadata):
        description = (kind.extra_json_schema or {}).get("description", "")
        env = (kind.extra or {}).get("env")
        kind = kind.type
    if isinstance(kind, msgspec.inspect.UnionType):  # `X | None`: the variable sets an X
        kind = next(t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType))
    return Variable(
        name=env or field.name.upper(),
        field=field.name,
        annotation=annotation,
        kind=kind,
        description=description,
        default=field.default,
    )


def values_from(variables: tuple[Variable, ...], environ: Mapping[str, str]) -> dict[str, Any]:
    """The fields the environment sets, by field name; all bad variables reported in one
    line (`SettingsError`)."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    for variable in variables:
        raw = environ.get(variable.name, "")
        if raw == "":  # empty means unset, e.g. a compose file's `LLM_API_KEY=`
            continue
        try:
            values[variable.field] = variable.parse(raw)
        except msgspec.ValidationError:
            errors.append(f"{variable.name}={raw!r}: expected {variable.expected()}")
    if errors:
        raise SettingsError("Invalid setting " + "; ".join(errors))
    return values
