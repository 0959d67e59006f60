"""openapi-generator's `swift6` generator turns openapi/openapi.json into the models an iOS
app would use; every property of the tool-cell schemas must come out, with its type.

The generator is the jar bundled by the `openapi-generator-cli` dev dependency; it needs a
Java runtime. Without one the test fails (CI installs Java) rather than skipping.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.openapi_export import OPENAPI_FILE
from app.realtime.asyncapi import CLIENT_FRAMES, SERVER_FRAMES
from app.tools.assembly import data_types

pytestmark = pytest.mark.slow

# The component schemas of a tool cell: the message, its activity, and the run it is in;
# and every websocket frame (components too, so one generator run gives an app all types).
CELL_SCHEMAS = ("ThreadMessageRead", "ToolActivity", "RunRead")
FRAME_SCHEMAS = tuple(f.__name__ for f in CLIENT_FRAMES + SERVER_FRAMES)
# Every kind of a cell's `data`: each tool action's result, progress, error, … (ToolData).
RESULT_SCHEMAS = tuple(sorted(s.__name__ for s in data_types()))
# What docs/api.md tells a Swift developer to generate with: fallback cases for values
# and union members a newer server may send.
FALLBACKS = "enumUnknownDefaultCase=true,oneOfUnknownDefaultCase=true"
GENERATOR = Path(sys.executable).with_name("openapi-generator-cli")
# `case toolActivity = "tool_activity"` or, when the names agree, `case status`.
CODING_KEY = re.compile(r'^\s+case (\w+)(?: = "([^"]+)")?$', re.MULTILINE)
PROPERTY = re.compile(r"^\s+public var (\w+): (.+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of generated Swift model files."""
    if shutil.which("java") is None:
        pytest.fail(
            "openapi-generator needs a Java runtime (JRE 11+): install one, e.g. "
            "`apt-get install openjdk-17-jre-headless`"
        )
    out = tmp_path_factory.mktemp("swift")
    result = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "-g",
            "swift6",
            "-i",
            str(OPENAPI_FILE),
            "-o",
            str(out),
            "--global-property",
            "models,modelDocs=false,modelTests=false",
            f"--additional-properties={FALLBACKS}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [models_dir] = list(out.glob("Sources/*/Models"))
    return models_dir


def _swift_properties(source: str) -> dict[str, str]:
    """JSON name -> declared Swift type, read from a generated model struct."""
    # A property with a default is declared `public var afterSeq: Int? = 0`.
    declared = {name: kind.split(" = ")[0] for name, kind in PROPERTY.findall(source)}
    keys = source[source.index("enum CodingKeys") :]
    keys = keys[: keys.index("}")]
    return {json or swift: declared[swift] for swift, json in CODING_KEY.findall(keys)}


def _is_nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return (isinstance(kind, list) and "null" in kind) or {"type": "null"} in schema.get(
        "anyOf", []
    )


@pytest.mark.parametrize("name", CELL_SCHEMAS + FRAME_SCHEMAS + RESULT_SCHEMAS)
def test_every_property_is_generated_with_its_optionality(models: Path, name: str) -> None:
    schema = json.loads(OPENAPI_FILE.read_text())["components"]["schemas"][name]
    properties = _swift_properties((models / f"{name}.swift").read_text())
    assert set(properties) == set(schema["properties"])
    for field, field_schema in schema["properties"].items():
        optional = _is_nullable(field_schema) or field not in schema.get("required", ())
        assert properties[field].endswith("?") == optional, (field, properties[field])


def test_tool_activity_is_typed_as_the_tool_activity_model(models: Path) -> None:
    message = _swift_properties((models / "ThreadMessageRead.swift").read_text())
    assert message["tool_activity"] == "ToolActivity?"
    activity = (models / "ToolActivity.swift").read_text()
    assert _swift_properties(activity)["status"] == "Status"
    assert 'case inProgress = "in_progress"' in activity
    assert _swift_properties(activity)["error_type"] == "ErrorType?"
    assert 'case timeout = "timeout"' in activity


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


def test_open_enums_and_frames_have_a_fallback_case(models: Path) -> None:
    frames = (models / "ServerFrame.swift").read_text()
    assert "default:\n            self = .unknownDefaultOpenApi" in frames
    activity = (models / "ToolActivity.swift").read_text()
    assert activity.count('case unknownDefaultOpenApi = "unknown_default_open_api"') == 2
