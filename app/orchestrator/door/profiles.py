"""Named provider profiles: which client, base URL, the *name* of the variable holding
the key, extra headers, timeout and prices, per deployment; an agent's model names one.

    # LLM_PROFILES_FILE (YAML), or the same document inline in LLM_PROFILES
    profiles:
      claude: {kind: litellm, provider: anthropic, api_key_env: ANTHROPIC_KEY}
      local:  {kind: openai, base_url: "http://gpu-box:8000/v1", timeout_seconds: 120,
               max_connections: 64, prices: {input_per_million: 0, output_per_million: 0}}

An agent whose model is `claude/claude-sonnet-4-5` goes through litellm as
`anthropic/claude-sonnet-4-5` with the key in $ANTHROPIC_KEY; `local/qwen3` through our
OpenAI-compatible client. A model whose prefix names no profile uses the default profile,
the old `LLM_*` settings: `openai/…`, `groq/…` and the other OpenAI-format providers
through our client, `demo/…` the offline demo, anything else litellm.

Keys are read from the environment when a run starts and live only in the call's
target (kept out of its repr); no profile, setting or response carries one.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml
from msgspec import Meta

from app.orchestrator.door.types import ModelTarget, Prices
from app.settings import SettingsError

# OpenAI-format providers our own client serves, with their public base URLs and the
# variable their SDKs read the key from (as litellm did for the default profile).
OPENAI_FORMAT: dict[str, tuple[str | None, str | None]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "custom_openai": (None, "OPENAI_API_KEY"),
    "hosted_vllm": (None, "HOSTED_VLLM_API_KEY"),
    "lm_studio": ("http://localhost:1234/v1", "LM_STUDIO_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "together_ai": ("https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
    "fireworks_ai": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY"),
    "deepinfra": ("https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"),
}
DEMO_PREFIX = "demo"
_NAME = r"^[a-z0-9][a-z0-9_-]{0,39}$"
Money = Annotated[float, Meta(ge=0)]


class ProfilePrices(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    input_per_million: Money
    output_per_million: Money
    cached_input_per_million: Money | None = None


class ProviderProfile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: Literal["openai", "litellm", "demo"]
    base_url: str | None = None  # required for `openai`
    api_key_env: Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    provider: str | None = None  # litellm's provider prefix for `litellm` (anthropic, gemini…)
    headers: dict[str, str] = {}
    timeout_seconds: Annotated[float, Meta(gt=0)] | None = None
    stream_usage: bool = True  # false: a server that refuses `stream_options`
    # connections to this provider held open at once (LLM_MAX_CONNECTIONS_PER_PROVIDER)
    max_connections: Annotated[int, Meta(ge=1)] | None = None
    prices: ProfilePrices | None = None


class ProfilesDocument(msgspec.Struct, forbid_unknown_fields=True):
    profiles: dict[Annotated[str, Meta(pattern=_NAME)], ProviderProfile] = {}


class ProfileError(SettingsError):
    """A bad profiles document; the message is one line for whoever starts the server."""


@lru_cache(maxsize=8)
def load_profiles(path: str | None, inline: str | None) -> dict[str, ProviderProfile]:
    """The profiles of LLM_PROFILES_FILE and LLM_PROFILES (inline wins on a name clash)."""
    found: dict[str, ProviderProfile] = {}
    try:
        from_file = Path(path).read_text() if path else None
    except OSError as exc:
        raise ProfileError(f"LLM_PROFILES_FILE: cannot read {path}: {exc.strerror}") from None
    for source, text in ((path, from_file), ("LLM_PROFILES", inline)):
        if not text:
            continue
        try:
            document = msgspec.convert(yaml.safe_load(text) or {}, ProfilesDocument)
        except (yaml.YAMLError, msgspec.ValidationError) as exc:
            raise ProfileError(f"{source}: {' '.join(str(exc).split())}") from None
        for name, profile in document.profiles.items():
            if profile.kind == "openai" and not profile.base_url:
                raise ProfileError(f"{source}: profile {name!r} (openai) needs a base_url")
            found[name] = profile
    return found


def _prices(profile: ProviderProfile) -> Prices | None:
    if profile.prices is None:
        return None
    given = profile.prices
    return Prices(given.input_per_million, given.output_per_million, given.cached_input_per_million)


def profile_target(
    name: str, profile: ProviderProfile, model: str, base: ModelTarget
) -> ModelTarget:
    """The target of `<name>/<model>` through a profile (`base` carries the defaults)."""
    key = os.environ.get(profile.api_key_env) if profile.api_key_env else None
    wire = model
    if profile.kind == "litellm" and profile.provider:
        wire = f"{profile.provider}/{model}"
    return ModelTarget(
        model=f"{name}/{model}",
        api_base=profile.base_url,
        api_key=key or None,
        timeout=profile.timeout_seconds or base.timeout,
        max_retries=base.max_retries,
        retry_base=base.retry_base,
        kind=profile.kind,
        wire_model=wire,
        headers=tuple(profile.headers.items()),
        prices=_prices(profile),
        profile=name,
        agent_type=base.agent_type,
        stream_usage=profile.stream_usage,
        max_connections=profile.max_connections or base.max_connections,
        image_store=base.image_store,
        vision=base.vision,
    )


def default_target(base: ModelTarget) -> ModelTarget:
    """The old `LLM_*` behaviour as the default profile: the client from the model's
    provider prefix, LLM_API_BASE/LLM_API_KEY (else the provider's public URL and key
    variable) for OpenAI-format providers, litellm's own lookup for the rest."""
    prefix, _, rest = base.model.partition("/")
    if prefix == DEMO_PREFIX:
        return _with(base, kind="demo", api_base=None, api_key=None)
    if prefix in OPENAI_FORMAT and rest and base.fast_stream:
        public_base, key_env = OPENAI_FORMAT[prefix]
        api_base = base.api_base or public_base
        if api_base is not None:
            key = base.api_key or (os.environ.get(key_env) if key_env else None)
            return _with(base, kind="openai", api_base=api_base, api_key=key, wire_model=rest)
    return _with(base, kind="litellm")


def _with(base: ModelTarget, **changes: object) -> ModelTarget:
    return replace(base, **changes)  # type: ignore[arg-type]


def resolve(base: ModelTarget, profiles: dict[str, ProviderProfile]) -> ModelTarget:
    """The target for `base.model`: through its profile if its prefix names one."""
    if base.kind is not None:
        return base  # already resolved (or set by hand)
    prefix, _, rest = base.model.partition("/")
    profile = profiles.get(prefix)
    if profile is not None and rest:
        return profile_target(prefix, profile, rest, base)
    return default_target(base)
