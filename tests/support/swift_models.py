"""The Swift models openapi-generator's `swift6` generator writes, read back, and a JSON
value checked against them as their `Codable` conformance would decode it.

No Swift toolchain runs in these tests, so decoding is checked statically: each model file
is read for its properties (`public var x: T`, with its JSON key from `CodingKeys`), its
String-backed enums (with `CaseIterableDefaultsLast`, an unknown value decodes as the last
case) and its tagged unions (`case "tag": self = .typeX(try X(from: decoder))`, and a
`default:` case when generated with a fallback). `decode_errors` then walks a value the
way the synthesized `Decodable` does: a missing or null value only where the type is
optional (`decodeIfPresent`), a string for `String`, `Date` or `UUID`, a whole number for
`Int`, and so on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.openapi_export import GENERATOR_CONFIG_FILE, OPENAPI_FILE

GENERATOR = Path(sys.executable).with_name("openapi-generator-cli")

PROPERTY = re.compile(r"^\s+public var (\w+): (.+?)(?: = .+)?$", re.MULTILINE)
CODING_KEY = re.compile(r'^\s+case (\w+)(?: = "([^"]+)")?$', re.MULTILINE)
STRING_ENUM = re.compile(r"public enum (\w+): String, [^{]*\{(.*?)\n\s*\}", re.DOTALL)
ENUM_CASE = re.compile(r'^\s+case \w+ = "([^"]*)"$', re.MULTILINE)
UNION_CASE = re.compile(r'case "([^"]+)":\s*self = \.\w+\(try (\w+)\(from: decoder\)\)')
UUID = re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
SCALARS = {
    "String": lambda v: isinstance(v, str),
    "Date": lambda v: isinstance(v, str),
    "UUID": lambda v: isinstance(v, str) and UUID.fullmatch(v) is not None,
    "Int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "Int64": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "Double": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "Float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "Bool": lambda v: isinstance(v, bool),
    "JSONValue": lambda v: True,
}
FALLBACK_CASE = "unknown_default_open_api"


def generate_swift_models(out: Path) -> Path:
    """The directory of the Swift model files openapi-generator's `swift6` writes from
    openapi/openapi.json with the configuration docs/api.md gives (`-c`: the fallback cases,
    and the open sets read as the closed ones they wrap). It needs a Java runtime: without
    one the test fails (CI installs Java) rather than skipping."""
    if shutil.which("java") is None:
        pytest.fail(
            "openapi-generator needs a Java runtime (JRE 11+): install one, e.g. "
            "`apt-get install openjdk-17-jre-headless`"
        )
    result = subprocess.run(
        [str(GENERATOR), "generate", "-g", "swift6", "-i", str(OPENAPI_FILE), "-o", str(out),
         "-c", str(GENERATOR_CONFIG_FILE),
         "--global-property", "models,modelDocs=false,modelTests=false"],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    [models_dir] = list(out.glob("Sources/*/Models"))
    return models_dir


@dataclass
class Model:
    """One generated file: a struct's properties, or a union's members, and its enums."""

    properties: dict[str, str] = field(default_factory=dict)  # JSON key -> Swift type
    members: dict[str, str] = field(default_factory=dict)  # union tag -> member model
    open_union: bool = False  # has a `default:` fallback
    enums: dict[str, set[str]] = field(default_factory=dict)  # enum -> raw values


def _properties(source: str) -> dict[str, str]:
    declared = dict(PROPERTY.findall(source))
    if "enum CodingKeys" not in source:
        return {}
    keys = source[source.index("enum CodingKeys") :]
    keys = keys[: keys.index("}")]
    return {json or swift: declared[swift] for swift, json in CODING_KEY.findall(keys)}


def read_models(directory: Path) -> dict[str, Model]:
    """Every model file of `directory`, by model name."""
    models = {}
    for path in directory.glob("*.swift"):
        source = path.read_text()
        enums = {name: set(ENUM_CASE.findall(body)) for name, body in STRING_ENUM.findall(source)}
        members = dict(UNION_CASE.findall(source))
        models[path.stem] = Model(
            properties={} if members else _properties(source),
            members=members,
            open_union="default:\n            self = .unknownDefaultOpenApi" in source,
            enums=enums,
        )
    return models


def decode_errors(
    models: dict[str, Model], value: Any, swift_type: str, where: str = "$", owner: str = ""
) -> list[str]:
    """Why `value` would not decode as `swift_type` (empty: it decodes)."""
    if swift_type.endswith("?"):
        return [] if value is None else decode_errors(models, value, swift_type[:-1], where, owner)
    if value is None:
        return [f"{where}: null for non-optional {swift_type}"]
    if swift_type in SCALARS:
        return [] if SCALARS[swift_type](value) else [f"{where}: {value!r} is no {swift_type}"]
    if match := re.fullmatch(r"\[String: (.+)\]", swift_type):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is no object"]
        return [e for k, v in value.items() for e in decode_errors(models, v, match[1], f"{where}.{k}", owner)]  # fmt: skip
    if match := re.fullmatch(r"\[(.+)\]", swift_type):
        if not isinstance(value, list):
            return [f"{where}: {value!r} is no array"]
        return [e for i, v in enumerate(value) for e in decode_errors(models, v, match[1], f"{where}[{i}]", owner)]  # fmt: skip
    return _decode_named(models, value, swift_type, where, owner)


def _enum_values(models: dict[str, Model], name: str, owner: str) -> set[str] | None:
    if owner and name in models[owner].enums:
        return models[owner].enums[name]
    if name in models and name in models[name].enums:
        return models[name].enums[name]
    return None


def _decode_named(
    models: dict[str, Model], value: Any, name: str, where: str, owner: str
) -> list[str]:
    values = _enum_values(models, name, owner)
    if values is not None:
        known = isinstance(value, str) and (value in values or FALLBACK_CASE in values)
        return [] if known else [f"{where}: {value!r} is not a case of {name}"]
    if name not in models:
        return [f"{where}: no model {name}"]
    model = models[name]
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is no object ({name})"]
    if model.members:
        member = model.members.get(value.get("type"))  # type: ignore[arg-type]
        if member is None:
            return [] if model.open_union else [f"{where}: unknown type {value.get('type')!r}"]
        return _decode_named(models, value, member, where, member)
    errors = []
    for key, swift_type in model.properties.items():
        if key not in value and not swift_type.endswith("?"):
            errors.append(f"{where}.{key}: missing ({name})")
        elif key in value:
            errors.extend(decode_errors(models, value[key], swift_type, f"{where}.{key}", name))
    return errors
