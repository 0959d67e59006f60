"""The model door's cheap-path settings keep errors and context windows as they were."""

from __future__ import annotations

import litellm

from app.orchestrator.llm import _price_unmapped_model, context_window, map_error


def test_provider_message_is_extracted_from_a_raw_json_error_body() -> None:
    body = '{"error": {"message": "slow down", "type": "rate", "code": null}}'
    exc = litellm.RateLimitError(
        message=f"OpenAIException - {body}", llm_provider="openai", model="m"
    )
    error = map_error(exc)
    assert error.kind == "rate_limit"
    assert error.message == "The model provider is rate limiting: slow down"


def test_plain_error_text_is_kept() -> None:
    exc = litellm.BadRequestError(
        message="OpenAIException - bad param", llm_provider="openai", model="m"
    )
    assert map_error(exc).message == "The model provider refused the request: bad param"


def test_an_unmapped_model_gets_a_zero_price_but_keeps_the_fallback_window() -> None:
    model = "openai/door-test-unmapped-model"
    _price_unmapped_model(model)
    info = litellm.get_model_info(model)
    assert info["input_cost_per_token"] == 0.0
    assert context_window(model, 12345) == 12345


def test_a_mapped_model_keeps_its_real_price() -> None:
    before = litellm.get_model_info("openai/gpt-4o-mini")["input_cost_per_token"]
    _price_unmapped_model("openai/gpt-4o-mini")
    assert before and litellm.get_model_info("openai/gpt-4o-mini")["input_cost_per_token"] == before
