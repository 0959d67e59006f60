"""The OpenAPI document: committed, complete, and good enough to generate clients from."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from app.lib.openapi import SWIFT_REJECTED_FORMS, is_free_form, swift_rejected_forms
from app.lib.openapi_docs import OPERATION_SUMMARIES, SCHEMA_EXAMPLES
from app.openapi_export import OPENAPI_FILE, generate_openapi

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}

# Snapshot of the component names: renaming a schema renames a class in every generated
# client, so a change here must be deliberate. Other modules' schemas are listed too;
# update this set (and regenerate openapi.json) when you add one.
FOUNDATION_COMPONENTS = {
    "AgentCreate",
    "AgentList",
    "AgentRead",
    "AgentUpdate",
    "FieldError",
    "Health",
    "MessageCreate",
    "MessagePage",
    "MessagePosted",
    "ProblemDetail",
    "RunRead",
    "TaskPage",
    "TaskRead",
    "TaskUpdate",
    "ThreadCreate",
    "ThreadMessageRead",
    "ThreadPage",
    "ThreadRead",
    "ThreadUpdate",
    "TokenCreate",
    "TokenRead",
    "ToolActivity",
    "ToolCallRequest",
    "UserRead",
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return generate_openapi()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_committed_file_matches_the_app(document: dict[str, Any]) -> None:
    committed = json.loads(OPENAPI_FILE.read_text())
    assert committed == document, (
        "openapi/openapi.json is stale: run `uv run python -m app.openapi_export`"
    )


def test_every_operation_has_a_unique_operation_id(document: dict[str, Any]) -> None:
    ids = [op.get("operationId") for _, _, op in _operations(document)]
    assert all(ids), [(m, p) for m, p, op in _operations(document) if not op.get("operationId")]
    assert len(ids) == len(set(ids))


def test_component_names_are_stable_and_readable(document: dict[str, Any]) -> None:
    names = set(document["components"]["schemas"])
    missing = FOUNDATION_COMPONENTS - names
    assert not missing, f"schemas renamed or removed: {sorted(missing)}"
    # Readable: plain identifiers, no module paths or generic parameters leaking in.
    ugly = [n for n in names if not n.isidentifier() or "_" in n]
    assert not ugly, ugly


def test_errors_are_documented_as_problem_details(document: dict[str, Any]) -> None:
    for method, path, operation in _operations(document):
        responses = operation["responses"]
        errors = {code: r for code, r in responses.items() if code.startswith(("4", "5"))}
        if not path.startswith("/api/health"):  # the probes take no input
            assert "400" in errors, (method, path)
        for code, response in errors.items():
            if (path, code) == ("/api/health", "503"):
                continue  # a degraded health report is a Health body, not a problem
            content = response.get("content", {})
            if path.startswith("/v1/") and path != "/v1/agent":  # OpenAI clients parse OpenAI's
                # error shape; /v1/agent is ours (problem details)
                error = {"schema": {"$ref": "#/components/schemas/OpenAIError"}}
                assert content == {"application/json": error}, (method, path, code)
                continue
            assert list(content) == ["application/problem+json"], (method, path, code)
            schema = content["application/problem+json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ProblemDetail"}, (method, path, code)


# Statuses only some operations can give, each with why (the others are derived from
# what an operation is: app/lib/openapi_problems.py).
SPECIFIC_ERRORS = {
    ("post", "/api/auth/token"): {"429"},  # failed logins throttled
    ("post", "/api/threads/{thread_id}/messages"): {"409", "429"},  # busy thread, budget
    ("post", "/v1/chat/completions"): {"409", "429", "500", "504"},
    ("put", "/api/mcp/servers/{server}/connection"): {"422"},  # the server refused the token
}


def test_every_operation_documents_every_error_it_can_answer(document: dict[str, Any]) -> None:
    """400 and 503 everywhere, 401 where a token is needed, 404 where an id is in the path,
    413 and 415 where a body is taken, and the statuses only some operations give."""
    for method, path, operation in _operations(document):
        if path.startswith("/api/health"):
            continue  # no input, and a 503 of their own shape (test above)
        expected = {"400", "503"}
        expected |= {"401"} if operation.get("security") else set()
        expected |= {"404"} if "{" in path else set()
        expected |= {"413", "415"} if "requestBody" in operation else set()
        expected |= SPECIFIC_ERRORS.get((method, path), set())
        documented = {code for code in operation["responses"] if code[0] in "45"}
        assert expected <= documented, (method, path, sorted(expected - documented))


def test_problem_members_and_request_unions_are_typed_and_named(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    run_id = schemas["ProblemDetail"]["properties"]["active_run_id"]
    assert run_id == {"format": "uuid", "type": ["string", "null"]}
    calls = schemas["MessageCreate"]["properties"]["tool_calls"]
    assert calls["items"] == {"$ref": "#/components/schemas/PreflightToolCall"}
    assert [m.get("type") or m["$ref"] for m in schemas["PreflightToolCall"]["oneOf"]] == [
        "string",
        "#/components/schemas/ToolCallRequest",
    ]
    # Always set once a cell exists: a generated client gets a non-optional date.
    assert "started_at" in schemas["ToolActivity"]["required"]


def test_protected_operations_declare_bearer_auth(document: dict[str, Any]) -> None:
    public = {("get", "/api/health"), ("get", "/api/health/ready"), ("post", "/api/auth/token"),
              ("get", "/api/mcp/oauth/callback")}  # the browser's redirect: `state` binds it  # fmt: skip
    for method, path, operation in _operations(document):
        if (method, path) in public:
            continue
        assert operation.get("security") == [{"BearerToken": []}], (method, path)
        assert "401" in operation["responses"], (method, path)


def test_integers_are_bounded(document: dict[str, Any]) -> None:
    """An unbounded integer can overflow the database (a 500); every input int is bounded."""

    def walk(node: Any, where: str, bounded: bool = False) -> None:
        # A bound on a `oneOf: [integer, null]` parent applies to its integer branch.
        if isinstance(node, dict):
            bounded = bounded or "maximum" in node
            kind = node.get("type")
            if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
                assert bounded or "enum" in node, where
            for key, value in node.items():
                walk(value, f"{where}/{key}", bounded and key in ("oneOf", "anyOf"))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}", bounded)

    for method, path, operation in _operations(document):
        for parameter in operation.get("parameters", []):
            walk(parameter.get("schema"), f"{method} {path} {parameter['name']}")
    for name, schema in document["components"]["schemas"].items():
        if name.endswith(("Create", "Update", "Request", "Decision")):
            walk(schema, name)


def test_no_schema_is_in_a_form_swift_generators_reject(document: dict[str, Any]) -> None:
    """Forms on app.lib.openapi.SWIFT_REJECTED_FORMS lose properties in generated Swift."""
    found = swift_rejected_forms(document)
    assert not found, [f"{where}: {SWIFT_REJECTED_FORMS[form]}" for where, form in found]


@pytest.mark.parametrize(
    ("schema", "form"),
    [
        ({"oneOf": [{"type": "string"}, {"type": "null"}]}, "oneof-null"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "anyof-null"),
        ({"anyOf": [{"$ref": "#/components/schemas/X"}, {"type": "null"}]}, "anyof-null"),
        ({"enum": ["a", "b"]}, "untyped-enum"),
        ({"const": "message"}, "untyped-enum"),
        ({"oneOf": [{"$ref": "#/c/X"}, {"$ref": "#/c/Y"}]}, "union-without-discriminator"),
        ({"allOf": [{"$ref": "#/components/schemas/X"}, {"type": "null"}]}, "null-member-allof"),
        ({"type": ["string", "null"], "enum": ["a", "b"]}, "enum-without-null"),
        ({"oneOf": [{"type": "string"}]}, "single-oneof"),
        ({"type": "string", "nullable": True}, "nullable-keyword"),
    ],
)
def test_the_rejected_form_check_finds_each_form(schema: dict[str, Any], form: str) -> None:
    document = {"components": {"schemas": {"Thing": {"properties": {"field": schema}}}}}
    assert swift_rejected_forms(document) == [("#/components/schemas/Thing/properties/field", form)]


def test_nullable_fields_keep_their_type(document: dict[str, Any]) -> None:
    """What Litestar wrote as `oneOf: [X, null]` keeps X, in a form Swift generators read."""
    schemas = document["components"]["schemas"]
    message = schemas["ThreadMessageRead"]["properties"]
    assert message["content"] == {"type": ["string", "null"]}
    assert message["run_id"] == {"type": ["string", "null"], "format": "uuid"}
    # A nullable $ref has no form all generators read: it is left out of the body instead.
    assert message["tool_activity"] == {"$ref": "#/components/schemas/ToolActivity"}
    assert "tool_activity" not in schemas["ThreadMessageRead"]["required"]
    # A nullable open enum: its wrapper admits null in the member a string takes.
    ref = schemas["ToolActivity"]["properties"]["error_type"]["$ref"]
    error_type = schemas[ref.rsplit("/", 1)[-1]]
    assert error_type["anyOf"][1] == {"type": ["string", "null"]}
    assert "timeout" in schemas["ErrorType"]["enum"]
    assert schemas["RunRead"]["properties"]["finished_at"] == {
        "type": ["string", "null"],
        "format": "date-time",
    }


def test_every_operation_has_a_summary_saying_what_it_does(document: dict[str, Any]) -> None:
    ids = {op["operationId"] for _, _, op in _operations(document)}
    assert set(OPERATION_SUMMARIES) == ids, "app/lib/openapi_docs.py: summaries out of date"
    for method, path, operation in _operations(document):
        summary = operation.get("summary", "")
        assert summary and summary != operation["operationId"], (method, path, summary)


@pytest.mark.parametrize("name", sorted(SCHEMA_EXAMPLES))
def test_schema_examples_are_valid_instances(document: dict[str, Any], name: str) -> None:
    [example] = document["components"]["schemas"][name]["examples"]
    # The $refs inside the schema resolve against this root, as in the document.
    root = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    validator = Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(example)]
    assert not errors, errors


def test_free_form_objects_say_they_take_any_member(document: dict[str, Any]) -> None:
    """A bare `{type: object}` is typed `Record<string, never>` by openapi-typescript: a
    tool's `example`, a device tool's `result`, an MCP form's schema and answer say
    `additionalProperties: {}` (any member) instead."""
    schemas = document["components"]["schemas"]
    assert schemas["ToolError"]["properties"]["example"]["additionalProperties"] == {}
    assert schemas["DeviceToolOutput"]["properties"]["result"]["additionalProperties"] == {}
    assert schemas["InputRequest"]["properties"]["requested_schema"]["additionalProperties"] == {}
    assert schemas["InputResponse"]["properties"]["content"]["additionalProperties"] == {}
    assert [path for path, node in _schema_nodes(document) if is_free_form(node)] == []


def _schema_nodes(node: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            if key not in ("example", "examples"):  # instances, not schemas
                found.extend(_schema_nodes(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_schema_nodes(value, f"{path}/{index}"))
    return found


def test_integer_bounds_are_whole_numbers_an_int32_holds(document: dict[str, Any]) -> None:
    """`limit`'s maximum was written `2147483648.0`: a float, one past int32."""
    bounds = [
        (path, key, node[key])
        for path, node in _schema_nodes(document)
        if node.get("type") == "integer" or "integer" in (node.get("type") or [])
        for key in ("minimum", "maximum")
        if key in node
    ]
    assert bounds and [b for b in bounds if not isinstance(b[2], int)] == []
    limits = [v for p, k, v in bounds if "/parameters/" in p and k == "maximum" and v > 100]
    assert limits and max(limits) <= 2**53  # a sequence number may pass int32; a limit not
    page = document["paths"]["/api/threads"]["get"]["parameters"]
    [limit] = [p["schema"] for p in page if p["name"] == "limit"]
    assert limit["maximum"] == 2**31 - 1


def test_fields_always_sent_are_required(document: dict[str, Any]) -> None:
    """A response's field the server always sends (null when empty) is `required`, so a
    generated client does not make it optional as well as nullable."""
    schemas = document["components"]["schemas"]
    always = {"input", "display_message", "error", "error_type", "finished_at", "expires_at",
              "duration_ms", "preview", "step_id"}  # fmt: skip
    assert always <= set(schemas["ToolActivity"]["required"])
    assert "data" not in schemas["ToolActivity"]["required"]  # left out until there is some
    assert "current_leaf_id" in schemas["ThreadRead"]["required"]
