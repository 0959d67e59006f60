"""Value sets and unions that grow, published open: a client built today decodes a value
or a member added tomorrow (docs/api.md, "Forward compatibility").

Apple's swift-openapi-generator reads `enum` and `oneOf` as closed: an unknown value
throws, and the whole page with it. Its documented pattern for open ones ("Useful OpenAPI
patterns", "Open enums and oneOfs") wraps them in an `anyOf` whose second member takes
anything else: `anyOf: [{$ref: ToolStatus}, {type: string}]` for an enum, `anyOf:
[{$ref: ToolData}, {$ref: UnknownData}]` for a union (an object with a `type`). Every
response property holding one refers to that wrapper (`OpenToolStatus`, `OpenToolData`);
the closed schema stays a component of its own, so the other generators keep a typed
enum or union: openapi-python-client and the TypeScript generators type the property
`ToolStatus | string`; openapi-generator, which has no `anyOf` for Swift, is told to use
the closed schema in the wrapper's place (`generator_config`, with its own fallback cases).

A nullable property refers to `Open<Name>OrNull` (`anyOf: [{$ref}, {type: [string,
null]}]`: never a `{type: null}` member, which swift-openapi-generator skips), marked
`x-nullable` so openapi-generator makes the property optional too. A request body's enum
(a Struct that forbids unknown fields) stays closed: the server validates what it gets.
"""

from __future__ import annotations

from typing import Any, get_args

COMPONENT_REF = "#/components/schemas/{name}"
OPEN_NOTE = (
    "Open: may gain values; a value not in `{closed}` is kept as a string: map it to a "
    "fallback (docs/api.md, Forward compatibility)."
)
UNION_NOTE = "Open: `{closed}`, or `{fallback}` for a `type` this client does not know yet."

# values -> (component name, the values in declaration order)
_OPEN_ENUMS: dict[frozenset[Any], tuple[str, tuple[Any, ...]]] = {}
# union component -> (its fallback component, what a client does with an unknown member)
_OPEN_UNIONS: dict[str, tuple[str, str]] = {}


def open_enum(literal: Any, name: str) -> None:
    """Publish the Literal's values, wherever a response property's `enum` has exactly
    them, as the open `Open<name>` over the closed component `name`."""
    values = get_args(literal)
    _OPEN_ENUMS[frozenset(values)] = (name, values)


def open_union(union: str, fallback: str, description: str) -> None:
    """Publish the tagged union `union` open: `Open<union>` is it or `fallback` (an object
    with a `type` string, any other keys), described by `description`."""
    _OPEN_UNIONS[union] = (fallback, description)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": COMPONENT_REF.format(name=name)}


def _open_property(prop: dict[str, Any]) -> str | None:
    """The open component a response property's schema should be, if it is a growing set."""
    if set(prop) == {"$ref"}:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"Open{name}" if name in _OPEN_UNIONS else None
    values = prop.get("enum")
    if not isinstance(values, list):
        return None
    known = _OPEN_ENUMS.get(frozenset(v for v in values if v is not None))
    if known is None:
        return None
    kind = prop.get("type")
    nullable = None in values or (isinstance(kind, list) and "null" in kind)
    return f"Open{known[0]}OrNull" if nullable else f"Open{known[0]}"


def _enum_components(name: str, values: tuple[Any, ...]) -> dict[str, dict[str, Any]]:
    note = OPEN_NOTE.format(closed=name)
    return {
        name: {
            "type": "string",
            "enum": list(values),
            "description": f"The values known today (`Open{name}` is the open set).",
        },
        f"Open{name}": {"anyOf": [_ref(name), {"type": "string"}], "description": note},
        f"Open{name}OrNull": {
            "anyOf": [_ref(name), {"type": ["string", "null"]}],
            "description": f"{note} Null when there is none.",
            "x-nullable": True,  # openapi-generator reads no other mark of a nullable anyOf
        },
    }


def _union_components(union: str) -> dict[str, dict[str, Any]]:
    fallback, description = _OPEN_UNIONS[union]
    return {
        fallback: {
            "type": "object",
            "title": fallback,
            "description": description,
            "properties": {"type": {"type": "string"}},
            "required": ["type"],
            "additionalProperties": {},
        },
        f"Open{union}": {
            "anyOf": [_ref(union), _ref(fallback)],
            "description": UNION_NOTE.format(closed=union, fallback=fallback),
        },
    }


def _wrapped() -> dict[str, str]:
    """Every open wrapper -> the closed schema it wraps."""
    wrapped = {f"Open{u}": u for u in _OPEN_UNIONS}
    for name, _ in _OPEN_ENUMS.values():
        wrapped.update({f"Open{name}": name, f"Open{name}OrNull": name})
    return wrapped


def _referenced(node: Any) -> set[str]:
    """The component names `node` refers to."""
    if isinstance(node, list):
        return {name for value in node for name in _referenced(value)}
    if not isinstance(node, dict):
        return set()
    ref = node.get("$ref")
    own = {ref.rsplit("/", 1)[-1]} if isinstance(ref, str) else set()
    return own.union(*(_referenced(value) for value in node.values()))


def open_components(schemas: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The open wrappers `schemas` refers to (and an open one for each union it has),
    with the closed enums and the fallbacks they refer to, by name."""
    catalogue: dict[str, dict[str, Any]] = {}
    for name, values in _OPEN_ENUMS.values():
        catalogue.update(_enum_components(name, values))
    for union in _OPEN_UNIONS:
        catalogue.update(_union_components(union))
    wanted = (_referenced(schemas) & set(_wrapped())) | {
        f"Open{u}" for u in _OPEN_UNIONS if u in schemas
    }
    wanted |= _referenced({n: catalogue[n] for n in wanted})
    return {name: catalogue[name] for name in sorted(wanted) if name in catalogue}


def with_open_schemas(schemas: dict[str, Any]) -> dict[str, Any]:
    """`schemas` (components by name, changed in place) with every response property of a
    growing set referring to its open wrapper, and the wrappers added."""
    for schema in schemas.values():
        if not isinstance(schema, dict) or schema.get("additionalProperties") is False:
            continue  # a request body: closed, the server validates it
        properties = schema.get("properties") or {}
        for field, prop in properties.items():
            wrapper = _open_property(prop) if isinstance(prop, dict) else None
            if wrapper is not None:
                properties[field] = _ref(wrapper)
    for name, schema in open_components(schemas).items():
        schemas.setdefault(name, schema)
    return schemas


def open_wrappers(schemas: dict[str, Any]) -> dict[str, str]:
    """Open wrapper -> the closed schema it wraps, for every wrapper in `schemas`."""
    return {wrapper: closed for wrapper, closed in _wrapped().items() if wrapper in schemas}


def generator_config(schemas: dict[str, Any]) -> dict[str, Any]:
    """openapi-generator's configuration (`-c`): its fallback cases for unknown values and
    members, and each open wrapper read as the closed schema it wraps (its Swift
    generators have no `anyOf`; the closed one, with the fallback case, is open there)."""
    wrappers = dict(sorted(open_wrappers(schemas).items()))
    return {
        "additionalProperties": {"enumUnknownDefaultCase": True, "oneOfUnknownDefaultCase": True},
        "schemaMappings": wrappers,
        "typeMappings": wrappers,
    }
