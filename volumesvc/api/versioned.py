"""Dispatch of handlers that change as a whole between microversions.

Placement's ``version_handler``: several functions of one qualified name
form one handler, each for a version window, and the request's version picks
the one that runs. This sits apart from ``microversions`` (the list and
negotiation) because it needs both Flask's request globals and the schema
merging in ``validation``, and ``validation`` itself needs the version list:
keeping the three in separate modules leaves the import graph a tree.
"""

import collections
from collections.abc import Callable
from typing import Any

from flask import g

from volumesvc.api import microversions as mv
from volumesvc.api import validation

# qualified name -> list of (min, max, func); a test checks windows never overlap.
VERSIONED_METHODS: dict[str, list[tuple[mv.Version, mv.Version, Callable[..., Any]]]] = \
    collections.defaultdict(list)
# qualified name -> schemas merged over all windows (see validation.merge).
_MERGED_SCHEMAS: dict[str, dict] = collections.defaultdict(dict)


class VersionNotAvailable(Exception):
    """No window of a versioned handler matches: 404 (route) or 405 (method)."""

    def __init__(self, status_code: int):
        super().__init__(status_code)
        self.status_code = status_code


def version_handler(min_ver: mv.Version, max_ver: mv.Version | None = None,
                    status_code: int = 404, *,
                    name: str | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Register one version window of a handler that changes as a whole.

    Several functions of the same ``name`` (default: the function's qualified
    name) in one module form one handler; the one whose window holds the
    request's version runs. Outside every window the request fails with
    ``status_code``: 404 for a route that does not exist yet, 405 for a
    method that does not. Give each window function its own Python name and
    the shared ``name``, so no function is redefined.
    """
    high = max_ver or mv.MAX_VERSION

    def decorator(func: Callable[..., Any]) -> Any:
        key = f"{func.__module__}.{name or func.__qualname__}"
        VERSIONED_METHODS[key].append((min_ver, high, func))
        validation.merge(_MERGED_SCHEMAS[key], func, min_ver, high)
        VERSIONED_METHODS[key].sort(key=lambda entry: entry[0])

        def dispatch(*args: Any, **kwargs: Any) -> Any:
            for low, top, candidate in VERSIONED_METHODS[key]:
                if low <= g.microversion <= top:
                    return candidate(*args, **kwargs)
            raise VersionNotAvailable(status_code)

        dispatch.__name__ = name or func.__name__
        dispatch.__qualname__ = name or func.__qualname__
        dispatch.__module__ = func.__module__
        dispatch.__doc__ = func.__doc__
        # Set through __dict__ as validation's decorators do: mypy allows no
        # new attributes on a function. The app and tests read them back.
        dispatch.__dict__["versioned_key"] = key
        # The dispatcher validates with the schemas of every window.
        dispatch.__dict__["_schemas"] = _MERGED_SCHEMAS[key]
        if getattr(func, "_policy_exempt", False):
            dispatch.__dict__["_policy_exempt"] = True
        return dispatch

    return decorator


def overlapping_windows() -> list[str]:
    """Names of versioned handlers whose windows overlap (should be empty)."""
    bad = []
    for key, windows in VERSIONED_METHODS.items():
        for (_, high, _f), (low, _h, _g) in zip(windows, windows[1:], strict=False):
            if low <= high:
                bad.append(key)
    return bad
