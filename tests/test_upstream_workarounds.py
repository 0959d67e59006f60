"""Workarounds of a dependency's bug, each with a test that fails once upstream fixes it:
then drop the workaround and this test."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from advanced_alchemy.types import JsonB


def test_advanced_alchemys_jsonb_still_breaks_on_this_sqlalchemy() -> None:
    """app/db/base.py defines `JsonB` itself (JSON, JSONB on PostgreSQL): advanced-alchemy's
    own calls `sqlalchemy.util.portable_instancemethod` for its Oracle variant, which
    SQLAlchemy 2.1 removed, as soon as a table has the column. When this test fails,
    advanced-alchemy is fixed: import its `JsonB` in app/db/base.py again."""
    with pytest.raises(AttributeError, match="portable_instancemethod"):
        sa.Table("workaround_probe", sa.MetaData(), sa.Column("data", JsonB))
