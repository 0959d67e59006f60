from __future__ import annotations

from datetime import datetime

from app.lib.schema import NonNegativeInt, Schema


class UsageBudget(Schema):
    """The monthly budget (USER_MONTHLY_TOKEN_BUDGET / USER_MONTHLY_COST_BUDGET_USD) and
    what this month's runs spent of it; a new message is refused once either is spent."""

    period_start: datetime
    resets_at: datetime
    tokens_used: NonNegativeInt
    cost_used_usd: float
    tokens_limit: NonNegativeInt | None = None
    cost_limit_usd: float | None = None


class UsageRead(Schema, omit_defaults=True):
    """Model usage of the user's runs created since `since`, summed (ended runs only:
    a run's usage is written when it ends)."""

    since: datetime
    runs: NonNegativeInt
    input_tokens: NonNegativeInt
    output_tokens: NonNegativeInt
    cached_tokens: NonNegativeInt
    reasoning_tokens: NonNegativeInt
    cost_usd: float  # runs whose model has no known price count 0
    # What your attachments take in storage now, every object counted (the quota's measure).
    attachment_bytes: NonNegativeInt
    budget: UsageBudget | None = None  # left out without a budget
