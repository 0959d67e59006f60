"""The hot path's Structs (app/threads/records.py) carry every column of their table,
under the ORM attribute's name: the serializers and sinks read them as ORM rows."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from app.db.models import Run, ThreadMessage
from app.threads.records import StoredMessage, StoredRun


@pytest.mark.parametrize(("struct", "model"), [(StoredMessage, ThreadMessage), (StoredRun, Run)])
def test_a_struct_has_every_column_of_its_table(struct: type, model: type) -> None:
    mapper = inspect(model)
    columns = {
        attribute.key
        for attribute in mapper.column_attrs
        if not attribute.key.startswith("_")  # advanced-alchemy's insert sentinel
    }
    assert set(struct.__struct_fields__) == columns
    keys = {column.key for column in mapper.local_table.c if column.key != "sa_orm_sentinel"}
    assert keys == columns  # rows by column key fill the Struct as they are
