"""Every tool result is bounded (app/tools/bounds.py): cut to fit, still its own kind."""

from __future__ import annotations

import msgspec

from app.tools.base import ToolResult
from app.tools.bounds import bounded, size_of
from app.tools.mcp.tool import McpToolResult


def test_a_small_result_is_left_as_it_is() -> None:
    result = ToolResult.success({"type": "x", "note": "short"})
    assert bounded(result, 1000) is result


def test_a_huge_result_is_cut_to_the_bound_and_still_decodes_as_its_kind() -> None:
    rows = [{"row": i, "payload": "y" * 100} for i in range(20_000)]
    result = ToolResult.success(
        McpToolResult(server="s", tool="t", structured_content={"rows": rows}, text="z" * 9000)
    )
    cut = bounded(result, 8192)
    assert size_of(cut.data) <= 8192 + 64
    assert cut.data["truncated"] is True and cut.data["original_size"] == size_of(result.data)
    typed = msgspec.convert(cut.data, McpToolResult)  # the tag and every field survive
    assert typed.server == "s" and typed.tool == "t" and typed.structured_content["rows"]


def test_a_free_form_object_of_many_keys_is_cut_too() -> None:
    """A device's output may be one object of a million keys: its keys are cut as well."""
    output = {f"k{i}": i for i in range(100_000)}
    result = msgspec.structs.replace(
        ToolResult.success({"type": "device_result"}), model_data=output
    )
    cut = bounded(result, 4096)
    assert size_of(cut.model_data) <= 4096 + 64 and cut.model_data["truncated"] is True


def test_what_the_model_reads_is_bounded_with_the_data() -> None:
    result = ToolResult.success({"type": "x", "text": "w" * 100_000})
    assert len(bounded(result, 2048).to_model_content()) <= 2048 + 128
