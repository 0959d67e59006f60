"""Operation summaries and schema examples of the OpenAPI document, in one table each.

Kept here rather than on the handlers so that the document's wording is reviewed in one
place; tests/test_openapi.py fails when an operation has no summary or a summary or
example names an operation or schema that no longer exists, and validates every example
against its schema. Summaries are what generated clients and Swagger UI show per call.
"""

from __future__ import annotations

from typing import Any

OPERATION_SUMMARIES: dict[str, str] = {
    "ListAgents": "List the agents you can start threads with",
    "CreateAgent": "Create an agent",
    "GetAgent": "Get an agent",
    "UpdateAgent": "Change an agent's name, prompt, model or tools",
    "CreateToken": "Sign in: exchange email and password for a bearer token",
    "RevokeToken": "Sign out: revoke the token of this request",
    "GetHealth": "Check the service and its database are up",
    "GetReadiness": "Check this process can serve: database and Redis reachable",
    "GetMe": "Get the signed-in user",
    "GetMyUsage": "Get your model usage and budget",
    "ListTasks": "List your tasks, newest first",
    "UploadAttachment": "Upload a photo or a file to send in a message",
    "GetAttachment": "Get an attachment's metadata",
    "DownloadAttachment": "Download an attachment's bytes",
    "DownloadAttachmentThumbnail": "Download an image attachment's thumbnail",
    "DeleteAttachment": "Delete an upload no message references yet",
    "UpdateTask": "Rename, annotate, complete or reopen a task",
    "ListSchedules": "List your schedules of runs",
    "CreateSchedule": "Run a prompt in a thread at a time or on a recurring rule",
    "GetSchedule": "Get one schedule and its next run time",
    "UpdateSchedule": "Change a schedule's prompt, rule, time or time zone",
    "PauseSchedule": "Pause a schedule",
    "ResumeSchedule": "Resume a paused schedule from its next time",
    "DeleteSchedule": "Delete a schedule",
    "AnswerTaskReminder": "Complete a task or snooze its reminder (a notification's action)",
    "ListMemories": "List what is remembered about you, newest first",
    "SearchMemories": "Find your memories about something, by meaning and by words",
    "GetMemory": "Get one memory",
    "UpdateMemory": "Correct a memory's content or tags",
    "DeleteMemory": "Forget one memory",
    "DeleteAllMemories": "Forget everything remembered about you",
    "ListThreads": "List your threads, most recent activity first",
    "CreateThread": "Start a thread with an agent",
    "GetThread": "Get a thread and its active run",
    "UpdateThread": "Rename a thread",
    "DeleteThread": "Delete a thread and its messages",
    "ListMessages": "Page through a thread's messages, or fetch the changes after a seq",
    "PostMessage": "Send a message; the agent answers in a new run",
    "GetMessage": "Get one message with its tool activity",
    "EditMessage": "Edit a question: a new version, a new branch, a new answer",
    "RegenerateReply": "Ask for another answer: a new version of the reply",
    "SwitchBranch": "Show another version's branch (the app's ‹ 2/3 ›)",
    "DeleteMessage": "Delete a message and the branch below it",
    "DecideApproval": "Approve or deny a tool call that awaits approval",
    "SubmitDeviceToolResult": "Answer a tool call the phone runs (awaiting_device)",
    "SubmitToolInput": "Answer a tool call that asks you for input (awaiting_input)",
    "GetRun": "Get a run's status and trace (steps, tool results)",
    "CancelRun": "Cancel a queued or running run",
    "ListTools": "List the tools agents can call: parameters, result schemas, how cells show",
    "listModels": "OpenAI-compatible: list your agents as models",
    "createChatCompletion": "OpenAI-compatible: run an agent on a chat, plain or streamed",
    "RunAgent": "Run an agent on a prompt: its plan, steps and answer",
    "RegisterDevice": "Register this phone for push notifications (idempotent by token)",
    "ListDevices": "List the devices that receive your push notifications",
    "DeleteDevice": "Stop push notifications to a device",
    "RegisterLiveActivity": "Follow a thread's current or next run with a Live Activity",
    "RegisterRunLiveActivity": "Follow one run with a Live Activity",
    "ListLiveActivities": "List your Live Activities, newest first",
    "EndLiveActivity": "End a Live Activity now, with its final content state",
    "UnregisterLiveActivity": "Stop pushes to a Live Activity, without an end push",
    "RegisterPushToStartToken": "Register this install's Live Activity push-to-start token",
    "DeletePushToStartToken": "Stop starting Live Activities by push on an install",
    "ListMcpServers": "List the per-user MCP servers and whether you connected each",
    "ConnectMcpServer": "Connect a per-user MCP server with your token (stored encrypted)",
    "DisconnectMcpServer": "Revoke your connection to a per-user MCP server",
    "StartMcpServerOAuth": "Start connecting a per-user MCP server through OAuth (its URL)",
    "FinishMcpServerOAuth": "The OAuth redirect URI: exchange the code, store the tokens",
}

_THREAD_ID = "7c0e3b5e-2f4d-4c51-9a6e-0d3b8f1a2c44"
_AGENT_ID = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
_USER = {
    "id": "3c2b1a0f-9e8d-4c7b-8a6f-5e4d3c2b1a0f",
    "email": "demo@example.com",
    "display_name": "Demo",
    "is_staff": False,
    "created_at": "2026-03-01T09:00:00Z",
}
_RUN_ID = "f1a9d2c3-8b7e-4d6f-a5c4-3b2a1e0f9d8c"
_TASK_RESULT = {
    "type": "task",
    "task_id": "0b6a5c1e-4d3f-4e2a-9c8b-7a6f5e4d3c2b",
    "task_title": "Book dentist",
    "task_status": "active",
    "notes": None,
    "due_at": "2026-03-02T09:00:00Z",
}
_TOOL_ACTIVITY = {
    "id": "call_8f2k",
    "name": "tasks",
    "status": "success",
    "input": {"action": "create", "title": "Book dentist", "due_at": "2026-03-02T09:00:00Z"},
    "data": _TASK_RESULT,
    "display_message": "Created task “Book dentist”",
    "error": None,
    "error_type": None,
    "started_at": "2026-03-01T10:15:02Z",
    "finished_at": "2026-03-01T10:15:03Z",
    "expires_at": None,
    "duration_ms": 412,
    "preview": ["Book dentist, due Mon 2 Mar 09:00"],
    "step_id": None,
}

_PLAN = {
    "status": "in_progress",
    "description": "Recall the user's preference, add the task, then answer.",
    "attempts": 1,
    "error": None,
    "steps": [
        {"id": "recall", "label": "Recall preferences", "executor": "agent", "action": "memory",
         "status": "ok", "tool": None, "args": {"query": "dentist"}, "description": None,
         "detail": "Recalled 1 memory", "error": None, "tool_call_id": None},
        {"id": "add-task", "label": "Add the task", "executor": "agent", "action": "tool",
         "status": "in_progress", "tool": "tasks", "tool_call_id": "call_plan_3f9a1c",
         "args": {"action": "create", "title": "Book dentist"}, "description": None,
         "detail": None, "error": None},
        {"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion",
         "status": "pending", "tool": None, "args": None, "description": None, "detail": None,
         "error": None, "tool_call_id": None},
    ],
}  # fmt: skip

_RUN: dict[str, Any] = {
    "id": _RUN_ID,
    "thread_id": _THREAD_ID,
    "status": "completed",
    "error": None,
    "trigger_message_id": "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d",
    "created_at": "2026-03-01T10:15:00Z",
    "started_at": "2026-03-01T10:15:01Z",
    "finished_at": "2026-03-01T10:15:05Z",
    "duration_ms": 4000,
    "usage": {
        "input_tokens": 1840,
        "output_tokens": 96,
        "cached_tokens": 1024,
        "reasoning_tokens": 0,
        "cost_usd": 0.000253,
    },
}

SCHEMA_EXAMPLES: dict[str, dict[str, Any]] = {
    "Plan": _PLAN,
    "ToolActivity": _TOOL_ACTIVITY,
    "ThreadMessageRead": {
        "id": "5d7e9f1a-3b2c-4d5e-8f6a-1b2c3d4e5f6a",
        "thread_id": _THREAD_ID,
        "run_id": _RUN_ID,
        "position": 2,
        "parent_id": "5d7e9f1a-3b2c-4d5e-8f6a-1b2c3d4e5f69",
        "siblings": {"count": 1, "index": 0, "ids": ["5d7e9f1a-3b2c-4d5e-8f6a-1b2c3d4e5f6a"]},
        "seq": 3,
        "role": "tool",
        "content": None,
        "is_user_facing": True,
        "client_message_id": None,
        "tool_activity": _TOOL_ACTIVITY,
        "created_at": "2026-03-01T10:15:02Z",
        "updated_at": "2026-03-01T10:15:03Z",
    },
    "RunRead": _RUN,
    "RunDetail": {
        **_RUN,
        "steps": [
            {
                "id": "turn-1",
                "label": "Model turn 1: create_task",
                "action": "tool",
                "status": "ok",
                "executor": "agent",
                "tool_call_ids": ["call_8f2k"],
                "tool": None,
                "args": None,
                "description": None,
                "detail": None,
                "error": None,
            },
            {
                "id": "completion",
                "label": "Answer",
                "action": "completion",
                "status": "ok",
                "executor": "litellm",
                "tool_call_ids": [],
                "tool": None,
                "args": None,
                "description": None,
                "detail": None,
                "error": None,
            },
        ],
        "tool_results": [
            {
                "tool_call_id": "call_8f2k",
                "message_id": "5d7e9f1a-3b2c-4d5e-8f6a-1b2c3d4e5f6a",
                "name": "create_task",
                "input": _TOOL_ACTIVITY["input"],
                "status": "success",
                "data": _TOOL_ACTIVITY["data"],
                "error": None,
                "error_type": None,
                "step_id": None,
            },
        ],
    },
    "ThreadRead": {
        "id": _THREAD_ID,
        "title": "Errands",
        "agent_id": _AGENT_ID,
        "last_seq": 4,
        "active_run_id": None,
        "current_leaf_id": "6e8f0a2b-4c3d-4e6f-9a7b-2c3d4e5f6a7b",
        "created_at": "2026-03-01T10:14:40Z",
        "updated_at": "2026-03-01T10:15:05Z",
    },
    "MessageCreate": {
        "content": "Remind me to book the dentist on Monday",
        "client_message_id": "ios-4F1C2A",
    },
    "TaskToolResult": _TASK_RESULT,
    "UserRead": _USER,
    "TokenCreate": {"email": "demo@example.com", "password": "demo-password"},
    "TokenRead": {
        "access_token": "tc_3q2-Vb8xW1yZ0aKfL7mN5pR4sT6uV9wX",
        "token_type": "bearer",
        "expires_at": "2026-03-31T09:00:00Z",
        "user": _USER,
    },
    "AgentRead": {
        "id": _AGENT_ID,
        "name": "Assistant",
        "agent_type": "assistant",
        "model": None,
        "system_prompt": "You are a concise assistant.",
        "reflection_prompt": None,
        "memory_reflection_prompt": None,
        "enabled_tools": None,
        "tools": ["tasks", "web", "memory", "self_authoring"],
        "is_shared": False,
        "description": "Keeps your tasks and finds things on the web.",
        "tool_description": None,
        "enabled": True,
    },
    "TaskRead": {
        "id": _TASK_RESULT["task_id"],
        "title": "Book dentist",
        "notes": None,
        "status": "active",
        "due_at": "2026-03-02T09:00:00Z",
        "remind_before_seconds": 900,
        "remind_at": "2026-03-02T08:45:00Z",
        "completed_at": None,
        "agent_id": _AGENT_ID,
        "thread_id": _THREAD_ID,
        "created_at": "2026-03-01T10:15:03Z",
        "updated_at": "2026-03-01T10:15:03Z",
    },
    "ProblemDetail": {
        "type": "about:blank",
        "title": "Bad Request",
        "status": 400,
        "detail": "Validation failed for POST /api/threads/{thread_id}/messages",
        "errors": [
            {"field": "content", "message": "Expected `str` of length >= 1", "source": "body"}
        ],
    },
}


def documented(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with the summaries and examples above filled in."""
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") in OPERATION_SUMMARIES:
                operation["summary"] = OPERATION_SUMMARIES[operation["operationId"]]
    schemas = document.get("components", {}).get("schemas", {})
    for name, example in SCHEMA_EXAMPLES.items():
        if name in schemas:
            schemas[name]["examples"] = [example]
    return document
