"""The agent `langgraph dev` serves in the turn benchmark (`bench.turn --langgraph VENV`).

A ReAct loop as LangGraph documents it: a `ChatOpenAI` model (streaming) bound to one
`tasks` tool, LangGraph's prebuilt `ToolNode` (which runs the model's parallel calls
concurrently) and `tools_condition` looping back to the model until it answers with text.
The model is the benchmark's fake one, at `BENCH_MODEL_URL` (its base URL, ending in
`/v1`). The same work our agent does per turn, so the two servers compare like for like.

Imports only langgraph/langchain: it runs in the LangGraph venv, not in ours.
"""

from __future__ import annotations

import json
import os
import uuid

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

TASKS: dict[str, dict[str, str]] = {}  # the server's in-process task list


@tool
async def tasks(action: str, title: str) -> str:
    """Manage the user's task list. action: "create"; title: the task's title."""
    if action != "create":
        return json.dumps({"error": f"unknown action {action!r}"})
    task_id = uuid.uuid4().hex
    TASKS[task_id] = {"id": task_id, "title": title, "status": "open"}
    return json.dumps({"created": TASKS[task_id]})


model = ChatOpenAI(
    base_url=os.environ["BENCH_MODEL_URL"],
    api_key="bench",
    model="fake-model",
    streaming=True,
).bind_tools([tasks])


async def agent(state: MessagesState) -> dict[str, list]:
    """One model call over the whole history: tool calls or the answer."""
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode([tasks]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)
builder.add_edge("tools", "agent")
graph = builder.compile()
