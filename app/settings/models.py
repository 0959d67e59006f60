"""Settings of the model providers: the default model and profile, and how the model door
talks to providers (timeouts, retries, connections)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt


@dataclass(frozen=True)
class ModelSettings:
    llm_model: Annotated[str, Meta(description="default model for agents without one")] = (
        "demo/tool-demo"
    )
    llm_api_base: Annotated[
        str | None, Meta(description="base URL of the default provider profile's models")
    ] = None
    llm_api_key: Annotated[
        str | None, Meta(description="API key of the default provider profile")
    ] = None
    llm_profiles_file: Annotated[
        str | None,
        Meta(
            description="YAML of named provider profiles (kind, base URL, key's variable, "
            "headers, timeout, prices); an agent's model `<profile>/<model>` picks one"
        ),
    ] = None
    llm_profiles: Annotated[
        str | None,
        Meta(description="provider profiles inline (the same YAML or JSON document)"),
    ] = None
    llm_timeout_seconds: Annotated[
        PositiveFloat, Meta(description="longest silence of a model stream")
    ] = 60.0
    llm_max_retries: Annotated[
        NonNegativeInt, Meta(description="retries of transient model errors (retry-after honoured)")
    ] = 2
    llm_retry_base_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="first backoff between model retries, doubled per attempt"),
    ] = 0.5
    llm_fast_stream: Annotated[
        bool,
        Meta(
            description="OpenAI-format providers through the door's own client (false: "
            "all through litellm)"
        ),
    ] = True
    llm_max_connections_per_provider: Annotated[
        PositiveInt,
        Meta(
            description="connections the model door holds open to one provider (a streaming "
            "run holds one; a profile's `max_connections` overrides it)"
        ),
    ] = 1000
    llm_context_tokens: Annotated[
        PositiveInt, Meta(description="context window assumed for models litellm does not know")
    ] = 32_000
