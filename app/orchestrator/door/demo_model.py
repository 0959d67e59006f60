"""The offline demo model's brain: simple intents become real tool calls.

Served to litellm as the custom provider `demo/…` by app/orchestrator/door/llm.py, so a demo
run goes through the same door as a real model (streaming, tool-call assembly, errors).
Without an API key, `litestar run` on the seeded data still shows live tool cells.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Args = Callable[[re.Match[str]], dict[str, Any]]


def _text(param: str, **fixed: Any) -> Args:
    """The captured text as `param` (with the call's fixed arguments)."""
    return lambda match: {**fixed, param: match.group(1).strip().rstrip(".!?")[:200]}


# (pattern, tool, its arguments): the first whose tool is offered wins. The question
# forms come before "remember …": "what do you remember about my dog?" is a search.
_INTENTS: tuple[tuple[re.Pattern[str], str, Args], ...] = (
    (re.compile(r"\bwhat do you (?:remember|know) about\s+(.+)", re.I | re.S), "memory",
     _text("query", action="search")),
    (re.compile(r"\bdo you remember\s+(.+)", re.I | re.S), "memory",
     _text("query", action="search")),
    (re.compile(r"\bremind me (?:to|about)\s+(.+)", re.I | re.S), "tasks",
     _text("title", action="create")),
    (re.compile(r"\badd (?:a )?task\s*:?\s+(.+)", re.I | re.S), "tasks",
     _text("title", action="create")),
    (re.compile(r"\bremember (?:that\s+)?(.+)", re.I | re.S), "memory",
     _text("content", action="save")),
    (re.compile(r"\bsearch(?: the web)?(?: for)?\s+(.+)", re.I | re.S), "web",
     _text("query", action="search")),
    (re.compile(r"\b(?:call yourself|rename yourself(?: to)?)\s+(.+)", re.I | re.S),
     "self_authoring", _text("value", action="update", field="name")),
    (re.compile(r"\bwhat are your instructions\b", re.I), "self_authoring",
     lambda _: {"action": "view", "field": "system_prompt"}),
    (re.compile(r"\bwhere am i\b", re.I), "device_location", lambda _: {"accuracy": "coarse"}),
)  # fmt: skip

# "ask researcher to find …": the specialist's ask_<name> tool, when this agent has it.
_ASK = re.compile(r"\bask (\w+)\s+(?:to |about |for |whether |if )?(.+)", re.I | re.S)


@dataclass
class DemoReply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {name, arguments (JSON)}


# "roll 4 dice": the bundled demo MCP server's tool (app/tools/mcp/demo_server.py)
_DICE = re.compile(r"\broll(?: (\d{1,2}))? (?:dice|die)\b", re.I)
DICE_TOOL = "demo__roll_dice"


def _dice_call(text: str, available: set[str]) -> dict[str, Any] | None:
    match = _DICE.search(text)
    if match is None or DICE_TOOL not in available:
        return None
    count = min(int(match.group(1) or 3), 10)
    return {"name": DICE_TOOL, "arguments": json.dumps({"count": max(count, 1)})}


def _tool_names(tools: list[dict[str, Any]] | None) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in tools or ()}


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _structured(body: dict[str, Any]) -> dict[str, Any]:
    """An MCP result's structured content, or its text when that is a JSON object."""
    if isinstance(body.get("structured_content"), dict):
        return body["structured_content"]
    try:
        parsed = json.loads(str(body.get("text") or ""))
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _described_data(body: dict[str, Any]) -> str | None:
    """What a result of a kind says, in words (None: a kind without its own words)."""
    kind = body.get("type")
    if kind == "memories":
        found = [str(m.get("content")) for m in body.get("memories") or [] if isinstance(m, dict)]
        return (
            "I remember: " + "; ".join(found[:3])
            if found
            else "I don't remember anything about that"
        )
    if kind == "delegation_result":
        return f"{body.get('agent_name') or 'The specialist'} says: {body.get('answer')}"
    if kind == "config":
        if body.get("action") == "update":
            return f"my {body.get('field')} is now “{body.get('value')}”"
        return f"my {body.get('field') or 'settings'}: {body.get('value') or body.get('values')}"
    if "latitude" in body and "longitude" in body:  # device_location's output, as posted
        place = body.get("locality") or f"{body['latitude']}, {body['longitude']}"
        return f"you are in {place}"
    rolls = _structured(body).get("rolls")
    if kind == "mcp_result" and isinstance(rolls, list) and rolls:
        return f"you rolled {_listed([str(r) for r in rolls])} (total {sum(rolls)})"
    return None


def _describe(body: dict[str, Any]) -> str:
    if not body.get("ok"):
        return f"that did not work ({body.get('error') or 'unknown error'})"
    if (words := _described_data(body)) is not None:
        return words
    if body.get("task_title"):
        return f"I added “{body['task_title']}” to your tasks"
    if body.get("type") == "memory" or body.get("memory_id"):
        return "I'll remember that"
    if body.get("type") == "mcp_result":
        return f"{body.get('tool')} on {body.get('server')} says: {body.get('text') or 'done'}"
    results = body.get("results")
    if isinstance(results, list):
        titles = [str(r.get("title") or r.get("url")) for r in results[:3] if isinstance(r, dict)]
        return "I found: " + "; ".join(titles) if titles else "the search found nothing"
    return "done"


def _summarise_tool_results(messages: list[dict[str, Any]]) -> str:
    outcomes = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        try:
            body = json.loads(message.get("content") or "{}")
        except ValueError:
            body = {}
        outcomes.append(_describe(body if isinstance(body, dict) else {}))
    text = "; ".join(reversed(outcomes)) or "done"
    return text[0].upper() + text[1:] + "."


def _listed_tools(prompt: str) -> set[str]:
    """The tool names a planning prompt lists (`- name: description {schema}`)."""
    return set(re.findall(r"^- ([a-z_][a-z0-9_]*): ", prompt, re.M))


def demo_plan(messages: list[dict[str, Any]]) -> DemoReply:
    """A plan (structured output was asked for): the intent's tool step, then the answer."""
    available = _listed_tools(str(messages[-1].get("content") or "")) if messages else set()
    call = _intent_call(messages, available)
    steps: list[dict[str, Any]] = []
    if call is not None:
        name, arguments = call
        steps.append({"id": "step-1", "label": f"Use {name}", "executor": "agent",
                      "action": "tool", "tool": name, "args": json.loads(arguments)})  # fmt: skip
    steps.append({"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion"})
    return DemoReply(text=json.dumps({"description": "The demo model's plan.", "steps": steps}))


def _intent_call(messages: list[dict[str, Any]], available: set[str]) -> tuple[str, str] | None:
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    content = (last_user or {}).get("content")
    if isinstance(content, list):  # a message with attachments: its text parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = str(content or "").strip()
    if (asked := _ASK.search(text)) and f"ask_{asked.group(1).lower()}" in available:
        message = asked.group(2).strip()[:500]
        return f"ask_{asked.group(1).lower()}", json.dumps({"message": message})
    for pattern, tool, arguments in _INTENTS:
        match = pattern.search(text)
        if match and tool in available:
            return tool, json.dumps(arguments(match))
    return None


def demo_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> DemoReply:
    while messages and messages[-1].get("role") == "system" and len(messages) > 1:
        messages = messages[:-1]  # a plan's notes to the completion: answer what ran
    if messages and messages[-1].get("role") == "tool":
        return DemoReply(text=_summarise_tool_results(messages))
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = str((last_user or {}).get("content") or "").strip()
    available = _tool_names(tools)
    if (dice := _dice_call(text, available)) is not None:
        return DemoReply(tool_calls=[dice])
    if (call := _intent_call(messages, available)) is not None:
        name, arguments = call
        return DemoReply(tool_calls=[{"name": name, "arguments": arguments}])
    return DemoReply(
        text=(
            "I'm the offline demo model. Try “remind me to buy milk”, “remember that I "
            "like tea”, “what do you remember about tea?”, “search for litestar”, “roll 3 "
            "dice”, “ask researcher about otters”, “where am I?” or “call yourself Ada”."
        )
    )


def split_text(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
