"""The plan the model writes: its strict JSON shape, the prompt asking for it, and the
checks a plan must pass before anything runs.

The model answers with `{"description"?, "steps": [...]}` (response_format json_schema);
decoding is strict (unknown keys, wrong types and missing fields are errors), then
`problems` checks what a schema cannot say: ids unique, exactly one completion step and
it is last, every tool step names a tool of the agent's effective toolset, memory steps
only when the agent has memory, no more tool steps than the run's tool-call budget.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec

from app.threads.plan import (
    MAX_PLAN_STEPS,
    Executor,
    PlanStep,
    PlanStepStatus,
    StepAction,
    StepId,
    StepLabel,
)

Description = Annotated[str, msgspec.Meta(max_length=1000)]


class DraftStep(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    id: StepId
    label: StepLabel
    executor: Executor
    action: StepAction
    tool: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    args: dict[str, Any] | None = None
    description: Description | None = None
    provider: Annotated[str, msgspec.Meta(max_length=100)] | None = None  # recorded only


class PlanDraft(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    steps: Annotated[list[DraftStep], msgspec.Meta(min_length=1, max_length=MAX_PLAN_STEPS)]
    description: Description | None = None


_decoder = msgspec.json.Decoder(PlanDraft)

RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "plan", "strict": False, "schema": msgspec.json.schema(PlanDraft)},
}


def _unfenced(text: str) -> str:
    """Models asked for bare JSON still wrap it in a ```json fence now and then."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3]
        text = text.removeprefix("json").strip()
    return text


def decode(text: str) -> PlanDraft | str:
    """The plan, or what is wrong with the text (said so the model can fix it)."""
    if not text.strip():
        return "The answer was empty; a JSON object with `steps` is required."
    try:
        return _decoder.decode(_unfenced(text).encode())
    except msgspec.ValidationError as exc:
        return f"The JSON does not match the plan schema: {exc}."
    except msgspec.DecodeError as exc:
        return f"The answer is not valid JSON ({exc}); send only the JSON object."


def problems(
    draft: PlanDraft,
    tools: list[str],
    *,
    memory: bool,
    budget: int,
    profiles: list[str] | tuple[str, ...] = (),
) -> list[str]:
    found: list[str] = []
    ids = [step.id for step in draft.steps]
    if repeated := sorted({i for i in ids if ids.count(i) > 1}):
        found.append(f"Step ids must be unique; repeated: {', '.join(repeated)}.")
    completions = [s.id for s in draft.steps if s.action == "completion"]
    if len(completions) != 1:
        found.append(f"Exactly one completion step is required; found {len(completions)}.")
    elif draft.steps[-1].action != "completion":
        found.append(f"The completion step ({completions[0]}) must be the last step.")
    for step in draft.steps:
        found += _step_problems(step, tools, memory)
        if step.action == "completion" and step.executor == "remote":
            found += _remote_problems(step, profiles)
    tool_steps = sum(step.action == "tool" for step in draft.steps)
    if tool_steps > budget:
        found.append(f"At most {budget} tool steps are allowed; the plan has {tool_steps}.")
    return found


def _step_problems(step: DraftStep, tools: list[str], memory: bool) -> list[str]:
    where = f"Step {step.id}"
    if step.action == "tool":
        if not step.tool:
            return [f"{where} is a tool step without `tool`; name one of: {', '.join(tools)}."]
        if step.tool not in tools:
            available = ", ".join(tools) or "none"
            return [f"{where} uses unknown tool {step.tool!r}; available tools: {available}."]
        return []
    if step.tool is not None:
        return [f"{where} is a {step.action} step and must not name a tool."]
    if step.action == "memory":
        if not memory:
            return [f"{where}: memory steps are not available to this agent; remove it."]
        query = (step.args or {}).get("query")
        if query is not None and not isinstance(query, str):
            return [f"{where}: args.query must be a string."]
    return []


def _remote_model(model: Any, provider: str | None) -> str | None:
    """`args.model` with `provider` as its profile prefix when it has none."""
    if not isinstance(model, str) or not model:
        return None
    if provider and not model.startswith(f"{provider}/"):
        return f"{provider}/{model}"
    return model


def _remote_problems(step: DraftStep, profiles: list[str] | tuple[str, ...]) -> list[str]:
    """A remote completion names its model through a provider profile (LLM_PROFILES):
    `args.model` `<profile>/<model>`, or `provider` + `args.model`."""
    where = f"Step {step.id}"
    names = ", ".join(profiles)
    if not profiles:
        return [f'{where}: no remote models are configured; use executor "litellm".']
    model = _remote_model((step.args or {}).get("model"), step.provider)
    if model is None:
        return [f'{where} is remote and needs args.model ("<profile>/<model>"; profiles: {names}).']
    if model.partition("/")[0] not in profiles or "/" not in model:
        return [f"{where}: model {model!r} names no provider profile; profiles: {names}."]
    return []


def remote_model(step: PlanStep) -> str | None:
    """The model a remote completion step routes to (checked by `problems`), else None."""
    if step.executor != "remote" or step.action != "completion":
        return None
    args = step.args or {}
    return _remote_model(args.get("model"), args.get("provider"))


def _args_of(step: DraftStep) -> dict[str, Any] | None:
    """The step's args, with a remote step's `provider` kept among them."""
    if step.provider is None:
        return step.args
    return {**(step.args or {}), "provider": step.provider}


def steps_of(draft: PlanDraft) -> list[PlanStep]:
    return [
        PlanStep(
            id=s.id,
            label=s.label,
            executor=s.executor,
            action=s.action,
            tool=s.tool,
            args=_args_of(s),
            description=s.description,
            status=PlanStepStatus.PENDING,
        )
        for s in draft.steps
    ]


INSTRUCTIONS = """\
Before answering, plan the work. Reply with only a JSON object (no prose, no code fence):
{"description": "<one line>", "steps": [<step>, ...]}
Each step: "id" (unique; letters, digits, - _ . :), "label" (short, for the user),
"executor" ("agent" for memory and tool steps, "litellm" for the completion),
"action" ("memory", "tool" or "completion"), and optionally "tool", "args", "description".
- "tool": call one tool. "tool" is its exact name from the list below; "args" are its
  arguments as its JSON schema says (with "action" where it has one).
{memory}- "completion": the final answer to the user. Exactly one, and it is the last step.
{remote}Steps run in order. If a memory or tool step fails, the later memory and tool steps are
skipped and the completion explains what happened. Use at most {budget} tool steps; a
question that needs no tools is a plan with only the completion step.
Available tools:
{tools}"""

MEMORY_LINE = (
    '- "memory": recall what the user asked you to remember; args {"query": "<words>"} '
    "(no args: the most recent memories).\n"
)


REMOTE_LINE = (
    '  When the answer needs a more capable model, give the completion "executor": "remote" '
    'and args {"model": "<profile>/<model>"}; profiles: {profiles}.\n'
)


def instructions(
    definitions: list[dict[str, Any]],
    *,
    memory: bool,
    budget: int,
    profiles: list[str] | tuple[str, ...] = (),
) -> str:
    lines = []
    for definition in definitions:
        function = definition.get("function") or {}
        schema = json.dumps(function.get("parameters") or {}, separators=(",", ":"))
        lines.append(f"- {function.get('name')}: {function.get('description', '')} {schema}")
    return (
        INSTRUCTIONS.replace("{memory}", MEMORY_LINE if memory else "")
        .replace(
            "{remote}", REMOTE_LINE.replace("{profiles}", ", ".join(profiles)) if profiles else ""
        )
        .replace("{budget}", str(budget))
        .replace("{tools}", "\n".join(lines) or "(none)")
    )


def correction(problem_list: list[str]) -> str:
    """The retry's prompt: what was wrong, so the model can fix it."""
    listed = "\n".join(f"- {p}" for p in problem_list)
    return (
        f"That plan is invalid:\n{listed}\n"
        "Answer again with only the corrected JSON object (same schema)."
    )
