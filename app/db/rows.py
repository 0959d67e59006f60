"""Rows written past the ORM's machinery, their instances attached to the session as the
ORM would leave them (persistent, clean, every column loaded).

A flush sorts the session's pending objects, works out their parameters and bookkeeping
and runs the INSERT: about twice the CPU of the INSERT alone, on every thread, run and
task created. `insert_new` fills in what a flush would (each column's Python default)
and runs one Core INSERT. A model with a column the database fills in (a server default
and no Python one) keeps the flush: only a RETURNING would tell its value.

An ORM `UPDATE … RETURNING entity` costs about 2.5 times its Core form; `adopt_rows`
turns the rows of the Core form into instances (updating the session's own instance of
a row it holds already, as `populate_existing` would).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import Column, ColumnElement, Table, bindparam, insert, inspect, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.sql.dml import Insert

from app.db import direct
from app.db.base import Base

T = TypeVar("T", bound=Base)
_MISSING = object()


@cache
def _attributes(model: type[Base]) -> dict[str, str]:
    """Column key -> attribute name."""
    mapper = model.__mapper__
    return {c.key: mapper.get_property_by_column(c).key for c in mapper.local_table.c}


def detached(model: type[T], values: Mapping[str, Any]) -> T:
    """An instance of a stored row from its values by attribute name: detached, clean.

    Built as the ORM's loader builds one: the values go straight into its dict. Through
    the constructor, each attribute set fires the change-tracking events (~20 per
    message, a fifth of the instance's cost) only for the state to be reset after."""
    instance: T = model.__mapper__.class_manager.new_instance()
    instance.__dict__.update(values)
    make_transient_to_detached(instance)
    return instance


def _stored(model: type[T], values: Mapping[str, Any]) -> T:
    """An instance holding a stored row's values (by column key), detached and clean."""
    attributes = _attributes(model)
    return detached(model, {attributes[key]: value for key, value in values.items()})


def attach_new(session: AsyncSession, model: type[T], values: Mapping[str, Any]) -> T:
    """The instance of a row just inserted (every column, by key), attached to `session`."""
    instance = _stored(model, values)
    session.add(instance)
    return instance


def adopt_rows(session: AsyncSession, model: type[T], rows: Iterable[Mapping[str, Any]]) -> list[T]:
    """Instances of `model` for rows read in full (every column), attached to `session`."""
    attributes, adopted = _attributes(model), []
    for row in rows:
        instance = _stored(model, row)
        held = session.identity_map.get(inspect(instance).key)
        if held is None:
            session.add(instance)
        else:
            for key, value in row.items():
                set_committed_value(held, attributes[key], value)
            instance = held  # type: ignore[assignment]
        adopted.append(instance)
    return adopted


def joined_columns(*models: type[Base]) -> list[Column[Any]]:
    """Every column of each model's table in turn: a Core select of several entities
    whose rows `adopt_joined` turns into instances (an ORM select of them costs several
    times as much to load)."""
    return [column for model in models for column in model.__mapper__.local_table.c]


def adopt_joined(
    session: AsyncSession, models: Sequence[type[Base]], row: Sequence[Any]
) -> list[Base]:
    """One instance per model from a row of `joined_columns(*models)`, attached as
    `adopt_rows` attaches them."""
    instances: list[Base] = []
    start = 0
    for model in models:
        keys = [column.key for column in model.__mapper__.local_table.c]
        values = dict(zip(keys, row[start : start + len(keys)], strict=True))
        instances.extend(adopt_rows(session, model, [values]))
        start += len(keys)
    return instances


# (column key, attribute, scalar default, callable default) per column
_Columns = tuple[tuple[str, str, Any, Any], ...]


def _defaults(column: Column[Any]) -> tuple[Any, Any]:
    default = column.default
    if default is None or not (default.is_scalar or default.is_callable):
        return None, None  # none, or the ORM's insert sentinel: NULL
    if default.is_scalar:
        return default.arg, None  # type: ignore[attr-defined]
    return None, default.arg  # type: ignore[attr-defined]


@cache
def _columns(model: type[Base]) -> _Columns:
    mapper = model.__mapper__
    table = mapper.local_table
    return tuple((c.key, mapper.get_property_by_column(c).key, *_defaults(c)) for c in table.c)


def _default(scalar: Any, make: Any) -> Any:
    return make(None) if make is not None else scalar


def new_row(model: type[Base], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of a new row by key: the given value, else what a flush would write
    (the column's Python default, else NULL)."""
    return {
        key: given[key] if key in given else _default(scalar, make)
        for key, _, scalar, make in _columns(model)
    }


@dataclass(frozen=True)
class _Plan:
    statement: Insert
    columns: _Columns


@cache
def _plan(model: type[Base]) -> _Plan | None:
    table = model.__mapper__.local_table
    assert isinstance(table, Table)
    if any(c.server_default is not None and c.default is None for c in table.c):
        return None
    return _Plan(insert(table), _columns(model))


def _fill(instance: Base, columns: _Columns) -> dict[str, Any]:
    """The new instance's row by column key, its unset attributes set to their defaults."""
    given = instance.__dict__
    values: dict[str, Any] = {}
    for column, attribute, scalar, make in columns:
        value = given.get(attribute, _MISSING)
        if value is _MISSING:
            value = _default(scalar, make)
            setattr(instance, attribute, value)
        values[column] = value
    return values


def _attach(session: AsyncSession, instance: T) -> T:
    make_transient_to_detached(instance)  # its values are now the stored ones
    session.add(instance)
    return instance


async def insert_new(session: AsyncSession, instance: T) -> T:
    """INSERT a new (transient) instance now and attach it to `session`, clean."""
    plan = _plan(type(instance))
    if plan is None:
        session.add(instance)
        await session.flush()
        return instance
    await direct.execute(session, plan.statement, _fill(instance, plan.columns))
    return _attach(session, instance)


def insert_where(model: type[Base], condition: ColumnElement[bool]) -> Insert:
    """`INSERT … SELECT <the row> WHERE condition RETURNING <key>`, for `insert_new_if`:
    a check and the insert it guards in one statement. Build it once (module level); the
    row's values are bound as `v_<column key>`, the condition's parameters are its own."""
    plan = _plan(model)
    if plan is None:
        raise ValueError(f"{model.__name__}: a column the database fills in needs a flush")
    table = plan.statement.table
    values = select(*(bindparam(f"v_{c.key}", type_=c.type) for c in table.c)).where(condition)
    primary = next(iter(table.primary_key))
    return insert(table).from_select([c.key for c in table.c], values).returning(primary)


async def insert_new_if(
    session: AsyncSession, instance: T, statement: Insert, condition: Mapping[str, Any]
) -> T | None:
    """INSERT a new instance with `statement` (from `insert_where`) if its condition
    holds (`condition`: the condition's parameters); attached, clean. None: it did not."""
    plan = _plan(type(instance))
    assert plan is not None  # insert_where refused to build the statement otherwise
    values = _fill(instance, plan.columns)
    params = {**condition, **{f"v_{key}": value for key, value in values.items()}}
    if (await direct.execute(session, statement, params)).first() is None:
        return None
    return _attach(session, instance)
