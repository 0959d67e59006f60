"""Forward compatibility: a page from a newer server, with a tool status, an error type, a
run status and a cell `data.type` this client does not know, decodes in every client
generated from openapi/openapi.json, and the known values stay typed.

The newer server is the app itself behind `NewerServer`, an httpx transport that adds such
values to the pages the app serves. Each generator is checked by what it can be run as
here: openapi-python-client's client decodes the page over HTTP; openapi-generator's
`swift6` models, openapi-typescript's and hey-api's types are checked statically (the Swift
models as `Codable` would decode, tests/support/swift_models.py; the TypeScript types by
`tsc`); Apple's swift-openapi-generator, with no Swift toolchain here, by the document
following its documented open pattern ("Useful OpenAPI patterns": an `anyOf` of the closed
enum or union and a schema taking anything else) wherever a growing set appears.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from jsonschema import Draft202012Validator

from app.lib.open_schemas import generator_config, open_wrappers
from app.openapi_export import GENERATOR_CONFIG_FILE, OPENAPI_FILE, generate_openapi
from app.settings import PROJECT_ROOT
from tests.support.databases import migrate, sqlite_url
from tests.support.generated_client import generated, module_of, served  # noqa: F401
from tests.support.swift_models import decode_errors, generate_swift_models, read_models
from tests.support.sync_db import seed_user

pytestmark = pytest.mark.slow

EMAIL, PASSWORD = "newer@example.com", "newer-password"
NEW_STATUS, NEW_ERROR, NEW_RUN_STATUS, NEW_KIND = "paused", "quota_exceeded", "paused", "calendar_event"  # fmt: skip
PARSERS = PROJECT_ROOT / "tests" / "parsers"
BIN = PARSERS / "node_modules" / ".bin"
NODE_TOOLS = all((BIN / tool).exists() for tool in ("openapi-typescript", "openapi-ts", "tsc"))
needs_node_tools = pytest.mark.skipif(
    not (NODE_TOOLS and shutil.which("node")) and not os.environ.get("REQUIRE_SPEC_PARSERS"),
    reason="needs node and `npm ci --prefix tests/parsers`; .ci/run installs them",
)
# Where a growing set appears in a response: (component, property) -> the closed schema.
GROWING = {
    ("ToolActivity", "status"): "ToolStatus",
    ("ToolActivity", "error_type"): "ErrorType",
    ("ToolActivity", "data"): "ToolData",
    ("RunToolResult", "status"): "ToolStatus",
    ("RunToolResult", "error_type"): "ErrorType",
    ("RunToolResult", "data"): "ToolData",
    ("AgentRunStep", "status"): "ToolStatus",
    ("RunRead", "status"): "RunStatus",
    ("RunDetail", "status"): "RunStatus",
    ("CompletionTrace", "run_status"): "RunStatus",
    ("ToolError", "error_type"): "ErrorType",
    ("ErrorFrame", "error_type"): "FrameErrorType",
    ("MemoryFrame", "change"): "MemoryChange",
}


def _cell(message: dict[str, Any], call: str, **activity: Any) -> dict[str, Any]:
    """A tool message of the page, after `message`, with the cell `activity`."""
    cell = {"id": call, "name": "calendar", "input": {"action": "create"}, "display_message": None,
            "error": None, "error_type": None, "started_at": message["created_at"],
            "finished_at": None, "expires_at": None, "duration_ms": None, "preview": None,
            "step_id": None, **activity}  # fmt: skip
    return {**message, "id": str(uuid4()), "role": "tool", "content": None,
            "client_message_id": None, "tool_activity": cell}  # fmt: skip


def newer_page(page: dict[str, Any]) -> dict[str, Any]:
    """`page` as a newer server may send it: a known failed cell, and a cell with a status,
    an error type and a `data.type` this client does not know."""
    page = copy.deepcopy(page)
    message = page["items"][-1]
    known = {"status": "failure", "error": "Timed out.", "error_type": "timeout",
             "data": {"type": "error", "error": "Timed out.", "error_type": "timeout"}}  # fmt: skip
    unknown = {"status": NEW_STATUS, "error": "Over quota.", "error_type": NEW_ERROR,
               "data": {"type": NEW_KIND, "title": "Dentist", "starts_at": "2026-03-02T09:00:00Z"}}  # fmt: skip
    page["items"] += [_cell(message, "call_known", **known), _cell(message, "call_new", **unknown)]
    return page


class NewerServer(httpx.HTTPTransport):
    """The app's answers as a newer server sends them: message pages with `newer_page`'s
    cells, a run with a status this client does not know."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        path = request.url.path
        if request.method != "GET" or response.status_code != 200:
            return response
        if path.endswith("/messages"):
            body = newer_page(json.loads(response.read()))
        elif "/runs/" in path:
            body = {**json.loads(response.read()), "status": NEW_RUN_STATUS}
        else:
            return response
        return httpx.Response(200, json=body, request=request)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(OPENAPI_FILE.read_text())


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a SQLite database of its own: what is checked here is how each generator
    reads the API's JSON, the same from either dialect, so each generator runs once (the
    generated clients drive both dialects in tests/test_client_generation.py and
    tests/test_client_flows.py)."""
    database_url = sqlite_url(tmp_path_factory.mktemp("open-enums"))
    migrate(database_url)
    seed_user(database_url, EMAIL, PASSWORD)
    with served(database_url, RUNNER_ENABLED="0") as url:
        yield url


@pytest.fixture(scope="module")
def served_page(server_url: str) -> dict[str, Any]:
    """A thread's message page and its run as the app serves them, then as a newer one."""
    with httpx.Client(base_url=server_url, timeout=30) as http:
        token = http.post("/api/auth/token", json={"email": EMAIL, "password": PASSWORD})
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        agent = http.get("/api/agents", headers=headers).json()["items"][0]
        thread = http.post("/api/threads", json={"agent_id": agent["id"]}, headers=headers)
        posted = http.post(f"/api/threads/{thread.json()['id']}/messages",
                           json={"content": "Book the dentist"}, headers=headers)  # fmt: skip
        assert posted.status_code == 202, posted.text
        page = http.get(f"/api/threads/{thread.json()['id']}/messages", headers=headers).json()
    return {"token": headers["Authorization"][7:], "thread_id": thread.json()["id"],
            "run_id": posted.json()["run"]["id"], "page": newer_page(page)}  # fmt: skip


def test_the_generator_configuration_is_current(document: dict[str, Any]) -> None:
    assert json.loads(GENERATOR_CONFIG_FILE.read_text()) == generator_config(
        generate_openapi()["components"]["schemas"]
    ), "openapi/openapi-generator.json is stale: run `uv run python -m app.openapi_export`"


def test_the_newer_page_is_what_the_document_promises(
    document: dict[str, Any], served_page: dict[str, Any]
) -> None:
    """The document admits the values a newer server adds (before, its enums refused
    them): a client that trusts it may receive them."""
    root = {"$ref": "#/components/schemas/MessagePage", "components": document["components"]}
    errors = [f"{list(e.path)}: {e.message}" for e in Draft202012Validator(root).iter_errors(served_page["page"])]  # fmt: skip
    assert errors == []


def _component(document: dict[str, Any], ref: str) -> tuple[str, dict[str, Any]]:
    name = ref.rsplit("/", 1)[-1]
    return name, document["components"]["schemas"][name]


@pytest.mark.parametrize(("component", "field"), sorted(GROWING))
def test_swift_openapi_generator_reads_every_growing_set_as_open(
    document: dict[str, Any], component: str, field: str
) -> None:
    """swift-openapi-generator, statically: the property is its documented open form, an
    `anyOf` of the closed schema and one taking any other value (a string, or an object
    with a `type`). It decodes each member it can: an unknown value leaves the closed one
    nil and lands in the other. No `{type: null}` member (it would skip the property)."""
    prop = document["components"]["schemas"][component]["properties"][field]
    wrapper, schema = _component(document, prop["$ref"])
    closed, other = schema["anyOf"]
    closed_name, closed_schema = _component(document, closed["$ref"])
    assert closed_name == GROWING[component, field]
    assert {"type": "null"} not in schema["anyOf"]
    if "enum" in closed_schema:
        assert closed_schema["type"] == "string" and None not in closed_schema["enum"]
        assert other in ({"type": "string"}, {"type": ["string", "null"]})
        nullable = other["type"] != "string"
        assert nullable == (schema.get("x-nullable") is True) == wrapper.endswith("OrNull")
    else:  # a tagged union and an object with the tag
        assert "discriminator" in closed_schema and closed_schema["oneOf"]
        _, fallback = _component(document, other["$ref"])
        assert fallback["properties"]["type"]["type"] == "string"
        assert fallback["required"] == ["type"] and fallback["additionalProperties"] == {}


def test_swift_openapi_generator_has_no_closed_copy_of_a_growing_set(
    document: dict[str, Any],
) -> None:
    """Every response property holding one of the growing sets' values refers to its open
    form: none is left a closed inline enum (a request body's is, the server checks it)."""
    closed = {frozenset(document["components"]["schemas"][c]["enum"])
              for c in set(GROWING.values()) if c not in ("ToolData",)}  # fmt: skip
    left = [
        (name, field)
        for name, schema in document["components"]["schemas"].items()
        if schema.get("additionalProperties") is not False
        for field, prop in (schema.get("properties") or {}).items()
        if frozenset(v for v in prop.get("enum", ()) if v is not None) in closed
    ]
    assert left == []
    assert open_wrappers(document["components"]["schemas"])["OpenServerFrame"] == "ServerFrame"


def test_openapi_python_client_decodes_the_newer_page_over_http(
    generated: str,  # noqa: F811
    server_url: str,
    served_page: dict[str, Any],
) -> None:
    client_mod = module_of(generated, "client")
    models = module_of(generated, "models")
    list_messages = module_of(generated, "api.messages.list_messages")
    get_run = module_of(generated, "api.runs.get_run")
    client = client_mod.AuthenticatedClient(
        base_url=server_url, token=served_page["token"], raise_on_unexpected_status=True,
        httpx_args={"transport": NewerServer()},
    )  # fmt: skip
    with client:
        page = list_messages.sync(served_page["thread_id"], client=client)
        run = get_run.sync(served_page["thread_id"], served_page["run_id"], client=client)
    known, new = page.items[-2].tool_activity, page.items[-1].tool_activity
    assert known.status is models.ToolStatus.FAILURE
    assert known.error_type is models.ErrorType.TIMEOUT
    assert isinstance(known.data, models.ToolError) and known.data.error == "Timed out."
    assert (new.status, new.error_type) == (NEW_STATUS, NEW_ERROR)  # kept, as strings
    assert isinstance(new.data, models.UnknownData) and new.data.type_ == NEW_KIND
    assert new.data.additional_properties["title"] == "Dentist"
    assert run.status == NEW_RUN_STATUS


def test_openapi_generator_swift_models_decode_the_newer_page(
    tmp_path: Path, served_page: dict[str, Any]
) -> None:
    """openapi-generator `swift6`, with the configuration docs/api.md gives, statically:
    the page decodes, an unknown value as the enum's fallback case, an unknown `data.type`
    as the union's; the properties stay the typed enums and union."""
    models = read_models(generate_swift_models(tmp_path))
    page = served_page["page"]
    assert decode_errors(models, page, "MessagePage") == []
    activity = models["ToolActivity"].properties
    assert (activity["status"], activity["error_type"], activity["data"]) == (
        "ToolStatus", "ErrorType?", "ToolData?")  # fmt: skip
    assert "unknown_default_open_api" in models["ToolStatus"].enums["ToolStatus"]
    assert NEW_KIND not in models["ToolData"].members and models["ToolData"].open_union
    closed = copy.deepcopy(models)  # the same models without the fallbacks fail on it
    closed["ToolStatus"].enums["ToolStatus"].discard("unknown_default_open_api")
    assert decode_errors(closed, page, "MessagePage") != []


def _typescript_check(tmp_path: Path, module: Path, types: str, page: dict[str, Any]) -> None:
    """`tsc` accepts the page as the generated type, and still refuses an unknown value
    where the type is the closed enum (the types stay typed)."""
    source = tmp_path / "check.ts"
    source.write_text(
        f'import type {{ {types} }} from "./{module.relative_to(tmp_path).with_suffix("")}";\n'
        f"export const page: MessagePage = {json.dumps(page)};\n"
        f'export const known: ToolStatus = "in_progress";\n'
        f"// @ts-expect-error: not a ToolStatus\n"
        f'export const unknown: ToolStatus = "{NEW_STATUS}";\n'
    )
    result = subprocess.run(
        [str(BIN / "tsc"), "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022",
         "--module", "esnext", "--moduleResolution", "bundler", str(source)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@needs_node_tools
def test_openapi_typescript_types_take_the_newer_page(
    tmp_path: Path, served_page: dict[str, Any]
) -> None:
    out = tmp_path / "schema.d.ts"
    run = subprocess.run([str(BIN / "openapi-typescript"), str(OPENAPI_FILE), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    text = out.read_text()
    assert 'OpenToolStatus: components["schemas"]["ToolStatus"] | string;' in text
    (tmp_path / "aliases.ts").write_text(
        'import type { components } from "./schema";\n'
        'export type MessagePage = components["schemas"]["MessagePage"];\n'
        'export type ToolStatus = components["schemas"]["ToolStatus"];\n'
    )
    _typescript_check(tmp_path, tmp_path / "aliases.ts", "MessagePage, ToolStatus", served_page["page"])  # fmt: skip


@needs_node_tools
def test_hey_api_types_take_the_newer_page(tmp_path: Path, served_page: dict[str, Any]) -> None:
    out = tmp_path / "hey"
    run = subprocess.run([str(BIN / "openapi-ts"), "-i", str(OPENAPI_FILE), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    text = (out / "types.gen.ts").read_text()
    assert "export type OpenToolStatus = ToolStatus | string;" in text
    assert "export type OpenToolData = ToolData | UnknownToolData;" in text
    _typescript_check(tmp_path, out / "types.gen.ts", "MessagePage, ToolStatus", served_page["page"])  # fmt: skip
