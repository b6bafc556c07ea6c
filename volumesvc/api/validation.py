"""Request and response JSON-schema validation, per microversion range.

Decorators only *declare* schemas on the handler (``func._schemas``); the
app's single view wrapper (``app._make_view``) applies them with the
negotiated version. Declaration time is where mistakes are caught: ranges of
one kind may not overlap or leave gaps between them, and every object schema
must say ``additionalProperties: false`` (an unknown key is a 400, as in
Nova; an unknown query key only from the version its route became strict,
see ``validate_query``). ``test_every_route_and_method_declares_its_schemas`` in
``tests/unit/api/test_app_contract.py`` walks the URL map and fails on a
route/method without the schemas its method needs (``REQUIRED_KINDS``).
"""

import base64
import binascii
import functools
import logging

import jsonschema

from volumesvc.api import errors
from volumesvc.api import microversions as mv

LOG = logging.getLogger(__name__)

BODY, QUERY, RESPONSE = "body", "query", "response"

# What every route/method must declare (checked by the coverage test).
REQUIRED_KINDS = {
    "GET": (QUERY, RESPONSE),
    "POST": (BODY, RESPONSE),
    "PUT": (BODY, RESPONSE),
    "DELETE": (RESPONSE,),
}

_VALIDATOR = jsonschema.Draft202012Validator
_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("base64", raises=(binascii.Error, ValueError))
def _is_base64(value) -> bool:
    """Nova's ``base64`` format: text that Python's lenient decoder accepts.

    Lenient as Nova's (characters outside the alphabet are skipped), so
    what Nova takes is taken here too; bad padding, or anything that is not
    ASCII, is refused with the schema's 400 ("... is not a 'base64'"), as
    Nova answers. Not a string: the ``type`` keyword says so, not this.
    """
    if isinstance(value, str):
        base64.b64decode(value)
    return True


def check_schema(schema, path="schema"):
    """Raise ValueError if any object schema lacks additionalProperties: false."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            if schema.get("additionalProperties") is not False and \
                    "patternProperties" not in schema:
                raise ValueError(f"{path}: object schema without additionalProperties: false")
        for key, value in schema.items():
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                # A mapping of names to schemas, not a schema: a key may be
                # called "properties" (2.98's image properties).
                for name, sub in value.items():
                    check_schema(sub, f"{path}.{key}.{name}")
            else:
                check_schema(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            check_schema(value, f"{path}[{index}]")


def _declare(kind, schema, min_version, max_version, **options):
    min_version = min_version or mv.MIN_VERSION
    max_version = max_version or mv.MAX_VERSION
    if schema is not None:
        _VALIDATOR.check_schema(schema)
        check_schema(schema)

    def decorator(func):
        _add(func.__dict__.setdefault("_schemas", {}), kind,
             (min_version, max_version, schema, options), func.__qualname__)
        return func

    return decorator


def _add(schemas: dict, kind, entry, name):
    """Add one range to ``schemas[kind]``; no overlap and no gap allowed."""
    entries = schemas.setdefault(kind, [])
    entries.append(entry)
    entries.sort(key=lambda item: item[0])
    for (_, high, _s, _o), (low, _h, _t, _p) in zip(entries, entries[1:], strict=False):
        if low <= high:
            raise ValueError(f"{name}: overlapping {kind} schema ranges")
        if (low.major, low.minor - 1) != (high.major, high.minor):
            raise ValueError(f"{name}: gap between {kind} schema ranges {high} and {low}")


def merge(target: dict, func, low, high):
    """Fold the schemas of one version window of a versioned handler into ``target``.

    A window's schemas are clipped to the window, so
    ``versioned.version_handler`` dispatchers expose one gap-free,
    overlap-free set across all windows.
    """
    for kind, entries in getattr(func, "_schemas", {}).items():
        for min_v, max_v, schema_, options in entries:
            clipped = (max(min_v, low), min(max_v, high), schema_, options)
            if clipped[0] <= clipped[1]:
                _add(target, kind, clipped, func.__qualname__)


def schema(body_schema, min_version=None, max_version=None):
    """Declare the request body schema for [min_version, max_version]."""
    return _declare(BODY, body_schema, min_version, max_version)


def query_schema(schema_, min_version=None, max_version=None, *,
                 strict_from=mv.V2_102_STRICT_QUERY_ALL):
    """Declare the query schema; values are lists (a key may repeat).

    ``strict_from`` is the version from which a key the schema does not
    know is a 400; below it such keys are dropped silently (see
    :func:`validate_query`). The default is 2.102, where every GET became
    strict; Nova's list routes became strict at 2.75
    (``mv.V2_75_STRICT_QUERY``), and ``None`` means never (the version
    documents ignore any query string).
    """
    return _declare(QUERY, schema_, min_version, max_version, strict_from=strict_from)


def query_windows(entries, *, strict_from=mv.V2_102_STRICT_QUERY_ALL):
    """:func:`windows` of :func:`query_schema`, all with one ``strict_from``."""
    return windows(functools.partial(query_schema, strict_from=strict_from), entries)


def response_body_schema(schema_, min_version=None, max_version=None):
    """Declare the response body schema; ``None`` means no body (204/202)."""
    return _declare(RESPONSE, schema_, min_version, max_version)


def windows(declare, entries):
    """Declare ``(first version, schema)`` entries as back-to-back version windows.

    ``declare`` is :func:`schema`, :func:`query_schema` or
    :func:`response_body_schema`; each schema holds from its version up to
    the next entry's (the last one to ``MAX_VERSION``).
    """
    def decorator(func):
        for (low, schema_), nxt in zip(entries, list(entries[1:]) + [None], strict=True):
            high = mv.before(nxt[0]) if nxt else mv.MAX_VERSION
            func = declare(schema_, low, high)(func)
        return func
    return decorator


def _pick(func, kind, version):
    for low, high, schema_, options in getattr(func, "_schemas", {}).get(kind, []):
        if low <= version <= high:
            return schema_, options
    return None, None


def _message(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    prefix = f"Invalid input for field/attribute {where}. " if where else ""
    return f"{prefix}Value: {error.instance!r}. {error.message}"


def validate_body(func, version, body):
    schema_, _ = _pick(func, BODY, version)
    if schema_ is None:
        return body
    error = jsonschema.exceptions.best_match(
        _VALIDATOR(schema_, format_checker=_FORMATS).iter_errors(body))
    if error is not None:
        raise errors.APIError(400, _message(error), errors.SCHEMA_INVALID)
    return body


def validate_query(func, version, args: dict) -> dict:
    """Validate ``{key: [values]}``; returns the dict with unknown keys dropped if due.

    Query strictness is decided here, once: below the ``strict_from`` its
    schema was declared with, a key the schema does not know is dropped
    silently (Nova before 2.75 for lists, before 2.102 for the other GETs);
    from that version on it is a 400 like any other schema error.
    """
    schema_, options = _pick(func, QUERY, version)
    if schema_ is None:
        return args
    strict_from = options["strict_from"]
    if strict_from is None or version < strict_from:
        known = schema_.get("properties", {})
        args = {k: v for k, v in args.items() if k in known}
    error = jsonschema.exceptions.best_match(
        _VALIDATOR(schema_, format_checker=_FORMATS).iter_errors(args))
    if error is not None:
        if error.validator == "additionalProperties":
            message = f"Invalid input for query parameters. {error.message}"
        else:
            message = _message(error)
        raise errors.APIError(400, message, errors.QUERY_INVALID)
    return args


def validate_response(func, version, body, mode: str):
    """Check a response body per ``[api] response_validation``."""
    if mode == "ignore":
        return
    schema_, _ = _pick(func, RESPONSE, version)
    if schema_ is None:
        return
    error = jsonschema.exceptions.best_match(_VALIDATOR(schema_).iter_errors(body))
    if error is None:
        return
    LOG.warning("Response of %s at %s breaks its schema: %s",
                func.__qualname__, version, error.message)
    if mode == "error":
        raise errors.APIError(500, "Response body failed schema validation: "
                              + error.message, errors.RESPONSE_INVALID)


def missing_kinds(func, method: str):
    """Schema kinds ``func`` must declare for ``method`` but does not."""
    declared = getattr(func, "_schemas", {})
    return [kind for kind in REQUIRED_KINDS.get(method, ()) if not declared.get(kind)]


# --- small schema helpers ----------------------------------------------------

# The largest value of the database's (signed 32-bit) integer columns; every
# integer the API reads from a request is held to it (see bounded_int).
MAX_INT = 2147483647


def bounded_int(value, name: str, minimum: int = 0, maximum: int | None = MAX_INT,
                code: str = errors.SCHEMA_INVALID) -> int:
    """``value`` (an int or its string form) as an int in [minimum, maximum], else 400.

    Schemas can bound JSON integers but not the integers spelled as
    strings that Nova accepts, and ``int()`` of either may be larger than
    any column (or, past 4300 digits, raise): every integer taken from a
    request goes through here before it is compared, stored or sliced with.
    ``maximum=None`` for a count that is only compared, never stored.
    """
    try:
        number = int(value)
        if isinstance(value, float) and number != value:
            raise ValueError(value)
    except (TypeError, ValueError, OverflowError):
        raise errors.APIError(400, f"Invalid input for {name}: it must be an integer.",
                              code) from None
    if number < minimum or (maximum is not None and number > maximum):
        raise errors.APIError(
            400, f"Invalid input for {name}: it must be >= {minimum} and <= {maximum}.", code)
    return number


def multi_params(item_schema):
    """A query parameter that may repeat: its values form a list."""
    return {"type": "array", "items": item_schema}


def object_(properties, required=(), **extra):
    """An object schema that forbids unknown keys."""
    schema_ = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema_["required"] = list(required)
    schema_.update(extra)
    return schema_
