"""Whether a model name can be routed at all: checked when an agent is saved, so that
`nowhere/x` is refused then rather than failing every run (issue 46 item 16)."""

from __future__ import annotations

from app.orchestrator.door import model_info
from app.orchestrator.door.profiles import load_profiles, resolve
from app.orchestrator.door.types import ModelTarget
from app.settings import Settings


def unroutable(model: str, settings: Settings) -> str | None:
    """Why `model` cannot be routed (None: it can). Resolves it exactly as a run does
    (door/profiles.resolve); only litellm's targets can name an unknown provider."""
    base = ModelTarget(
        model=model, api_base=settings.llm_api_base, fast_stream=settings.llm_fast_stream
    )
    target = resolve(base, load_profiles(settings.llm_profiles_file, settings.llm_profiles))
    if target.kind != "litellm":
        return None
    if not model_info.knows_provider(target.wire_model or target.model, target.api_base):
        profiles = ", ".join(
            sorted(load_profiles(settings.llm_profiles_file, settings.llm_profiles))
        )
        return (
            f"no provider profile ({profiles or 'none configured'}) or known provider "
            f"prefix routes {model!r}"
        )
    return None
