"""openapi-generator's `swift6` generator turns openapi/openapi.json into the models an iOS
app would use; every property of the tool-cell schemas must come out, with its type.

The generator is the jar bundled by the `openapi-generator-cli` dev dependency; it needs a
Java runtime. Without one the test fails (CI installs Java) rather than skipping.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from app.lib.problems import ProblemException
from app.openapi_export import GENERATOR_CONFIG_FILE, OPENAPI_FILE
from app.realtime.asyncapi import CLIENT_FRAMES, SERVER_FRAMES
from app.threads import activity as cells
from app.threads.schemas import ToolActivity
from app.tools.assembly import data_types, get_registry
from app.tools.base import ToolResult
from app.tools.errors import ERROR_TYPES
from app.tools.runtime.executor import parse_call
from tests.support.swift_models import decode_errors, generate_swift_models, read_models

pytestmark = pytest.mark.slow

# The component schemas of a tool cell: the message, its activity, and the run it is in;
# and every websocket frame (components too, so one generator run gives an app all types).
CELL_SCHEMAS = ("ThreadMessageRead", "ToolActivity", "RunRead")
FRAME_SCHEMAS = tuple(f.__name__ for f in CLIENT_FRAMES + SERVER_FRAMES)
# Every kind of a cell's `data`: each tool action's result, progress, error, … (ToolData).
RESULT_SCHEMAS = tuple(sorted(s.__name__ for s in data_types()))
SECURITY_REFUSAL = "http://127.0.0.1/ resolves to a private address"  # web.fetch's words
# `case toolActivity = "tool_activity"` or, when the names agree, `case status`.
CODING_KEY = re.compile(r'^\s+case (\w+)(?: = "([^"]+)")?$', re.MULTILINE)
PROPERTY = re.compile(r"^\s+public var (\w+): (.+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of generated Swift model files."""
    return generate_swift_models(tmp_path_factory.mktemp("swift"))


def _swift_properties(source: str) -> dict[str, str]:
    """JSON name -> declared Swift type, read from a generated model struct."""
    # A property with a default is declared `public var afterSeq: Int? = 0`.
    declared = {name: kind.split(" = ")[0] for name, kind in PROPERTY.findall(source)}
    keys = source[source.index("enum CodingKeys") :]
    keys = keys[: keys.index("}")]
    return {json or swift: declared[swift] for swift, json in CODING_KEY.findall(keys)}


def _schemas() -> dict[str, Any]:
    return json.loads(OPENAPI_FILE.read_text())["components"]["schemas"]


def _is_nullable(schema: dict[str, Any], schemas: dict[str, Any]) -> bool:
    """Null is among the values: in its type, or (an open set's wrapper) in a member's."""
    if "$ref" in schema:
        return _is_nullable(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
    kind = schema.get("type")
    members = schema.get("anyOf", [])
    return (isinstance(kind, list) and "null" in kind) or any(
        _is_nullable(m, schemas) for m in members if "$ref" not in m
    )


@pytest.mark.parametrize("name", CELL_SCHEMAS + FRAME_SCHEMAS + RESULT_SCHEMAS)
def test_every_property_is_generated_with_its_optionality(models: Path, name: str) -> None:
    schemas = _schemas()
    schema = schemas[name]
    properties = _swift_properties((models / f"{name}.swift").read_text())
    assert set(properties) == set(schema["properties"])
    for field, field_schema in schema["properties"].items():
        optional = _is_nullable(field_schema, schemas) or field not in schema.get("required", ())
        assert properties[field].endswith("?") == optional, (field, properties[field])


def test_tool_activity_is_typed_as_the_tool_activity_model(models: Path) -> None:
    message = _swift_properties((models / "ThreadMessageRead.swift").read_text())
    assert message["tool_activity"] == "ToolActivity?"
    activity = _swift_properties((models / "ToolActivity.swift").read_text())
    assert activity["status"] == "ToolStatus"
    assert 'case inProgress = "in_progress"' in (models / "ToolStatus.swift").read_text()
    assert activity["error_type"] == "ErrorType?"
    assert 'case timeout = "timeout"' in (models / "ErrorType.swift").read_text()


@pytest.mark.parametrize(
    ("union", "frames"), [("ServerFrame", SERVER_FRAMES), ("ClientFrame", CLIENT_FRAMES)]
)
def test_frames_decode_as_an_enum_switching_on_type(
    models: Path, union: str, frames: list[type]
) -> None:
    """The tagged union becomes a Swift enum with one case per frame, chosen by `type`."""
    source = (models / f"{union}.swift").read_text()
    assert f"public enum {union}:" in source
    for frame in frames:
        tag, name = frame.__struct_config__.tag, frame.__name__
        assert f"case type{name}({name})" in source
        assert f'case "{tag}":\n            self = .type{name}(try {name}(from: decoder))' in source


def test_a_cells_data_decodes_as_an_enum_with_a_fallback_case(models: Path) -> None:
    """`data` is the union ToolData: a case per kind chosen by `type`, and a case for a
    kind this app does not know yet instead of a decoding error (forward compatibility)."""
    assert _swift_properties((models / "ToolActivity.swift").read_text())["data"] == "ToolData?"
    source = (models / "ToolData.swift").read_text()
    for struct in data_types():
        tag, name = struct.__struct_config__.tag, struct.__name__
        assert f'case "{tag}":\n            self = .type{name}(try {name}(from: decoder))' in source
    assert "default:\n            self = .unknownDefaultOpenApi" in source


def test_open_sets_are_read_as_the_closed_ones_with_their_fallback_case(models: Path) -> None:
    """openapi-generator has no `anyOf` for Swift: the configuration reads each open
    wrapper as the closed enum or union it wraps, whose fallback case keeps it open."""
    mappings = json.loads(GENERATOR_CONFIG_FILE.read_text())["typeMappings"]
    assert {"OpenToolStatus", "OpenRunStatus", "OpenErrorType", "OpenToolData"} <= set(mappings)
    for wrapper, closed in mappings.items():
        assert not (models / f"{wrapper}.swift").exists(), wrapper
        source = (models / f"{closed}.swift").read_text()
        enum_fallback = 'case unknownDefaultOpenApi = "unknown_default_open_api"'
        union_fallback = "default:\n            self = .unknownDefaultOpenApi"
        assert enum_fallback in source or union_fallback in source, closed


def _failed(outcome: ToolResult, name: str = "tasks") -> dict[str, Any]:
    cell = cells.finished(cells.started("call_1", name, {"action": "update"}), outcome)
    return msgspec.to_builtins(msgspec.convert(cell, ToolActivity))  # as the API serves it


def _failure_cells() -> list[dict[str, Any]]:
    """Failed cells as the app writes them, of every error type, with every kind of hint:
    refused calls (unknown tool, action or value, missing and unknown parameters), a
    refused domain change, a denied approval, timeouts, cancellation and crashes."""
    registry = get_registry()
    refused = [
        parse_call(registry, name, args, allowed=allowed)
        for name, args, allowed in [
            ("taks", {"action": "list"}, None),
            ("tasks", {"action": "crawl"}, None),
            ("tasks", {"action": "create"}, None),
            ("tasks", {"action": "list", "status": "someday"}, None),
            ("tasks", {"action": "list", "colour": "red"}, None),
            ("tasks", "{not json", None),
            ("memory", {"action": "recall"}, ["tasks"]),
        ]
    ]
    refused.append(ToolResult.refused(ProblemException(404, "Task not found.")))
    refused.append(ToolResult.failure(SECURITY_REFUSAL, "security_error", url="http://127.0.0.1/"))
    started = cells.started("call_2", "memory", {"action": "forget"}, approval_ttl=60)
    ended = [cells.denied(started, "The user said no."), cells.expired(started)]
    ended += [cells.closed(started, error_type=t, error="Run ended.") for t in ERROR_TYPES]
    served = [msgspec.to_builtins(msgspec.convert(c, ToolActivity)) for c in ended]
    return [_failed(r) for r in refused if isinstance(r, ToolResult)] + served


def test_a_failed_cell_of_every_error_type_decodes(models: Path) -> None:
    """A failed cell's data (`ToolError`, with the hints of its kind) decodes into the
    generated models, for every error type. No Swift toolchain runs here: the values are
    checked against the declared Swift types as `Codable` would decode them
    (tests/support/swift_models.py)."""
    failures = _failure_cells()
    assert {c["error_type"] for c in failures} == set(ERROR_TYPES)
    hints = {key for c in failures for key in c["data"]}
    assert {"allowed_actions", "available_tools", "errors", "required_param"} <= hints
    assert any(e.get("allowed_values") for c in failures for e in c["data"].get("errors", []))
    swift = read_models(models)
    for cell in failures:
        assert cell["data"]["type"] == "error", cell
        assert decode_errors(swift, cell, "ToolActivity") == [], cell
        # each hint the model names is a typed property, not a skipped one
        named = set(_schemas()["ToolError"]["properties"]) & set(cell["data"])
        assert named <= set(swift["ToolError"].properties), cell["data"]
