"""Settings that bound what one request or one user may use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, NonNegativeInt, PositiveInt


@dataclass(frozen=True)
class LimitSettings:
    max_request_body_bytes: Annotated[
        PositiveInt, Meta(description="largest accepted request body")
    ] = 256 * 1024
    user_monthly_token_budget: Annotated[
        NonNegativeInt,
        Meta(
            description="model tokens (input + output) a user's runs may spend per UTC month; "
            "then new messages get 429 until the month ends (0: no budget)"
        ),
    ] = 0
    user_monthly_cost_budget_usd: Annotated[
        NonNegativeFloat,
        Meta(description="the same budget in USD of model cost (0: no budget)"),
    ] = 0.0
