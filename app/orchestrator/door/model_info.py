"""What litellm's public model map knows about a model: its context window, its prices,
and token counts for trimming history. Looked up once per model (the map is read once,
at import, from the package: LITELLM_LOCAL_MODEL_COST_MAP)."""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

import litellm

from app.orchestrator.door.types import ModelTarget, Prices, Usage

logger = logging.getLogger(__name__)

# litellm's process-wide switches, set by the first door file any command imports (the
# CLI's model check too). litellm 1.110's TypedDicts use `ReadOnly`: pydantic warns once
# per type when it first builds one, a dozen lines in the server's log that say nothing
# to us; and a model it cannot route prints a "Provider List" hint to stdout.
warnings.filterwarnings("ignore", message=r"Items? .* (is|are) using the `ReadOnly` qualifier")
litellm.suppress_debug_info = True
litellm.telemetry = False
logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # no line per call


def map_name(target: ModelTarget) -> str:
    """The name litellm's map knows the model by (`openai/gpt-4o-mini`, `anthropic/…`)."""
    return target.wire_model or target.model


@functools.lru_cache(maxsize=256)
def _info(model: str) -> dict[str, Any] | None:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:  # not in the map: a self-hosted model, a new release
        return None


@functools.lru_cache(maxsize=256)
def context_window(model: str, fallback: int) -> int:
    """The model's input window in tokens (litellm's model map), else `fallback`."""
    info = _info(model)
    if info is None:
        return fallback
    return int(info.get("max_input_tokens") or info.get("max_tokens") or fallback)


@functools.lru_cache(maxsize=256)
def map_prices(model: str) -> Prices | None:
    """USD per million tokens from litellm's map, or None when it has no price."""
    info = _info(model)
    if info is None or info.get("input_cost_per_token") is None:
        return None
    per_million = 1_000_000
    cached = info.get("cache_read_input_token_cost")
    return Prices(
        input=float(info.get("input_cost_per_token") or 0.0) * per_million,
        output=float(info.get("output_cost_per_token") or 0.0) * per_million,
        cached_input=float(cached) * per_million if cached is not None else None,
    )


def price(target: ModelTarget, usage: Usage) -> float | None:
    """The call's cost in USD: the profile's prices, else litellm's map, else None
    (unknown: a self-hosted model). Cached input is billed at its own rate where known;
    reasoning tokens are part of the output tokens already."""
    prices = target.prices or map_prices(map_name(target))
    if prices is None:
        return None
    cached = min(usage.cached_tokens, usage.input_tokens)
    cached_rate = prices.input if prices.cached_input is None else prices.cached_input
    total = (
        (usage.input_tokens - cached) * prices.input
        + cached * cached_rate
        + usage.output_tokens * prices.output
    )
    return total / 1_000_000


@functools.lru_cache(maxsize=256)
def knows_provider(model: str, api_base: str | None) -> bool:
    """Whether litellm can route `model` (a provider prefix it knows, or an api_base)."""
    try:
        litellm.get_llm_provider(model, api_base=api_base)
    except Exception:  # litellm raises its BadRequestError (or a ValueError) for these
        return False
    return True


def supports_images(model: str) -> bool:
    """Whether litellm's map says the model reads image inputs."""
    info = _info(model)
    return bool(info and info.get("supports_vision"))


# What an image costs in the window, counted before it is resolved (a 2048-px image is
# ~1,100 tokens at OpenAI's high detail, ~1,600 at Anthropic's): as text of that size.
IMAGE_STAND_IN = "image " * 1_600


def _countable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Image parts as text of their cost (litellm would fetch or decode them to count)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = [
                {"type": "text", "text": IMAGE_STAND_IN} if p.get("type") == "image_url" else p
                for p in content
                if isinstance(p, dict)
            ]
            message = {**message, "content": parts}
        out.append(message)
    return out


def count_tokens(model: str, messages: list[dict[str, Any]], tools: Any) -> int:
    return litellm.token_counter(model=model, messages=_countable(messages), tools=tools)
