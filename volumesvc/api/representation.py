"""One table per versioned API body: the view and its response schema come from the same rows.

Why: the dict a handler returns and the JSON schema its response is checked
against used to spell the same microversion ladder separately (three times
for servers), so a key added to one and forgotten in the other only showed
up as a 500 under ``response_validation = error``. Here every key is one
:class:`Field` row (name, version window, JSON schema, whether it is always
there, how to compute it); :meth:`Representation.render` builds the body at a
version, :meth:`Representation.schema` the schema, and
:meth:`Representation.windows` the back-to-back schema windows for
``validation.windows``: a new window starts wherever some row starts or ends.

Key order is the table order (the app does not sort keys), so rows are
listed in the order the API has always emitted them.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

from volumesvc.api import microversions as mv
from volumesvc.api.validation import object_

Value = Callable[[Any, types.SimpleNamespace], Any]


def next_version(version):
    """The version just above ``version`` (the first one a closed row is gone)."""
    return mv.parse(f"{version.major}.{version.minor + 1}")


def attr(name: str) -> Value:
    """A value that is simply the source's attribute ``name``."""
    return lambda source, ctx: getattr(source, name)


@dataclasses.dataclass(frozen=True, eq=False)
class Field:
    """One key of a body.

    ``first``/``last``: the versions it exists at (``last`` None: still
    there). ``when``: the key is shown only when this holds (admin-only,
    only-for-some-statuses): the schema then allows but does not require it.
    ``views``: the views (e.g. ``show`` vs ``list``) it belongs to; empty
    means all. ``items``: the value is a list of sources rendered with that
    nested representation (its schema is an array of the nested one's).

    One name may have several rows: disjoint windows give it a new shape at
    a version; overlapping rows must agree on the schema and keep the key's
    position where the first applicable row puts it (e.g. an admin-only
    key that later becomes visible to everybody).
    """

    name: str
    schema: dict | None
    value: Value
    first: Any = mv.MIN_VERSION
    last: Any = None
    when: Callable[[Any, types.SimpleNamespace], bool] | None = None
    views: tuple[str, ...] = ()
    items: Representation | None = None

    def active(self, version, view) -> bool:
        in_window = self.first <= version and (self.last is None or version <= self.last)
        return in_window and (not self.views or view in self.views)

    def json_schema(self, version, view):
        if self.items is not None:
            return {"type": "array", "items": self.items.schema(version, view)}
        return self.schema


@dataclasses.dataclass(frozen=True, eq=False)
class Representation:
    """An ordered table of :class:`Field` rows; see the module docstring."""

    name: str
    fields: tuple[Field, ...]

    def __post_init__(self):
        for field in self.fields:
            if field.last is not None and field.last < field.first:
                raise ValueError(f"{self.name}.{field.name}: last before first")
            if (field.schema is None) == (field.items is None):
                raise ValueError(f"{self.name}.{field.name}: give a schema or items")
        # Every version where rows change, in every view: conflicting rows fail here.
        for view in self._views():
            for version in self.boundaries(view, clip=False):
                self.schema(version, view)

    def _views(self):
        named = {view for field in self.fields for view in field.views}
        return sorted(named) or [None]

    def with_fields(self, *fields: Field) -> Representation:
        """A copy with ``fields`` appended (the table itself never changes)."""
        return dataclasses.replace(self, fields=self.fields + tuple(fields))

    def render(self, version, source, *, view=None, **ctx) -> dict:
        """The body of ``source`` at ``version``; ``ctx`` reaches every value/when."""
        context = types.SimpleNamespace(version=version, view=view, **ctx)
        body: dict = {}
        for field in self.fields:
            if field.name in body or not field.active(version, view):
                continue
            if field.when is not None and not field.when(source, context):
                continue
            value = field.value(source, context)
            if field.items is not None:
                value = [field.items.render(version, item, view=view, **ctx) for item in value]
            body[field.name] = value
        return body

    def schema(self, version, view=None) -> dict:
        """The object schema at ``version``: exactly the keys the view may show."""
        properties: dict = {}
        required: list = []
        for field in self.fields:
            if not field.active(version, view):
                continue
            schema_ = field.json_schema(version, view)
            if properties.setdefault(field.name, schema_) != schema_:
                raise ValueError(f"{self.name}.{field.name}: rows disagree at {version}")
            if field.when is None and field.name not in required:
                required.append(field.name)
        return object_(properties, required=required)

    def boundaries(self, view=None, *, clip=True) -> list:
        """Versions where the keys (or their schemas) of ``view`` change, from MIN.

        ``clip``: leave out versions above MAX_VERSION (a row may be
        declared ahead of the version that introduces it).
        """
        versions = {mv.MIN_VERSION}
        for field in self.fields:
            if field.views and view not in field.views:
                continue
            versions.add(field.first)
            if field.last is not None:
                versions.add(next_version(field.last))
            if field.items is not None:
                versions.update(field.items.boundaries(view, clip=False))
        return sorted(v for v in versions if not clip or v <= mv.MAX_VERSION)

    def windows(self, envelope, *, view=None, first=None, last=None) -> list:
        """``[(version, schema)]`` for ``validation.windows`` over [first, last].

        ``envelope(item_schema, version)`` wraps the object schema into the
        response body (``{"server": ...}``, a list with links, ...).
        """
        first = first or mv.MIN_VERSION
        last = last or mv.MAX_VERSION
        versions = [v for v in self.boundaries(view) if first < v <= last]
        return [(v, envelope(self.schema(v, view), v)) for v in [first, *versions]]
