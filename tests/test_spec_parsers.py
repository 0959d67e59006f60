"""The published documents pass the real parsers: openapi/openapi.json through
openapi-spec-validator, openapi/asyncapi.json through the official AsyncAPI parser
(`@asyncapi/parser` from npm, installed by .ci/run into tests/parsers)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from openapi_spec_validator import validate

from app.openapi_export import OPENAPI_FILE
from app.realtime.asyncapi import ASYNCAPI_PATH
from app.settings import PROJECT_ROOT

PARSERS = PROJECT_ROOT / "tests" / "parsers"
NODE = shutil.which("node")
INSTALLED = (PARSERS / "node_modules" / "@asyncapi" / "parser").is_dir()


def test_openapi_document_is_valid() -> None:
    validate(json.loads(OPENAPI_FILE.read_text()))


@pytest.mark.skipif(
    not (NODE and INSTALLED) and not os.environ.get("REQUIRE_SPEC_PARSERS"),
    reason="needs node and `npm ci --prefix tests/parsers`; .ci/run installs them",
)
def test_asyncapi_document_passes_the_official_parser() -> None:
    assert NODE, "node is not installed"
    parsed = subprocess.run(
        [NODE, str(PARSERS / "validate_asyncapi.mjs"), str(ASYNCAPI_PATH)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr
