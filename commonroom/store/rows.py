"""Whole model rows read by SQL text, without peewee's query builder.

Peewee builds a query's SQL by walking its expression tree on every call:
on this 2-CPU VM that is ~150-300 µs a query (``Session.get_by_id`` with the
lazy load of its participant: ~630 µs), against ~15 µs for SQLite to run
it. The commit path already writes by cached SQL text
(:meth:`Store.insert`, :meth:`Store.update`); the reads a client polls
(its session, the lists of handoffs, proposals, board messages, the event
history) read through :func:`select_rows` here, with their ``WHERE`` and
``ORDER BY`` written out (docs/performance.md, *Polled reads skip the query
builder*).

:func:`select_rows` answers the same model instances peewee's own ``SELECT *``
answers: every column converted by its field's ``python_value``, the
instance made as peewee's cursor makes it (``__no_default__``, nothing
dirty), so a foreign key still loads lazily and ``save()`` still works.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import peewee as pw

M = TypeVar("M", bound=pw.Model)

#: ``SELECT <columns> FROM <table>`` and each column's (field name, python_value).
_Plan = tuple[str, list[tuple[str, Callable[[Any], Any]]]]


def _plan(model: type[pw.Model], only: tuple[str, ...] | None) -> _Plan:
    """The plan of ``model``'s ``only`` fields (None: every field), kept on the model's own metadata.

    So it lives as long as the model class: every store defines its classes
    afresh (``store.models``), and a closed store's go with their plans.
    """
    plans: dict[tuple[str, ...] | None, _Plan] | None = getattr(model._meta, "commonroom_plans", None)
    if plans is None:
        plans = {}
        setattr(model._meta, "commonroom_plans", plans)
    plan = plans.get(only)
    if plan is None:
        fields = model._meta.sorted_fields if only is None else [model._meta.fields[name] for name in only]
        columns = ", ".join(f'"{f.column_name}"' for f in fields)
        plan = (f'SELECT {columns} FROM "{model._meta.table_name}" ',
                [(f.name, f.python_value) for f in fields])
        plans[only] = plan
    return plan


def select_rows(model: type[M], tail: str, params: Sequence[Any] = (), only: tuple[str, ...] | None = None) -> list[M]:
    """The rows of ``model`` that ``SELECT * FROM <table> <tail>`` finds, as model instances.

    ``tail`` is the rest of the statement (``WHERE …``, ``ORDER BY …``,
    ``LIMIT ?``; empty for every row) with ``?`` for each of ``params``.
    Column names in it are the table's (``"participant_id"`` for the
    foreign key ``participant``). ``only``: the field names to read (as
    ``Model.select(*fields)``; the others are None on the instances),
    e.g. to leave a version's text out of a list. Raises what the
    database raises (``KeyError`` for a name in ``only`` that is no field).
    """
    head, convert = _plan(model, only)
    cursor = model._meta.database.execute_sql(head + tail, tuple(params))
    out = []
    for values in cursor.fetchall():
        row = model(__no_default__=1, **{name: to_python(value) for (name, to_python), value in zip(convert, values)})
        row._dirty.clear()  # type: ignore[attr-defined]  # peewee's own cursor does the same
        out.append(row)
    return out


def first_row(model: type[M], tail: str, params: Sequence[Any] = ()) -> M | None:
    """The first row :func:`select_rows` finds, or None (``tail`` should end ``LIMIT 1`` when more could match)."""
    found = select_rows(model, tail, params)
    return found[0] if found else None


def row_by_id(model: type[M], key: Any) -> M | None:
    """The row of ``model`` whose primary key is ``key``, or None (as ``Model.get_or_none(Model.id == key)``)."""
    pk = model._meta.primary_key
    assert isinstance(pk, pw.Field), f"{model.__name__} has a primary key"
    return first_row(model, f'WHERE "{pk.column_name}" = ?', (key,))


def where_sql(conditions: list[str]) -> str:
    """``WHERE a AND b …`` of the non-empty ``conditions`` (empty when none is)."""
    kept = [c for c in conditions if c]
    return "WHERE " + " AND ".join(kept) + " " if kept else ""
