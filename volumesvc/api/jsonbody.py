"""Parse a request body into JSON the rest of the API can handle safely.

``json.loads`` alone lets through three things that later code cannot cope
with: nesting so deep that the decoder (or the schema validator walking the
result) overflows Python's stack, strings holding lone surrogates (valid
JSON escapes that no database driver or response encoder can write), and
the non-finite numbers ``NaN``/``Infinity``/``1e999``, which would be stored
and then sent back as bare ``Infinity`` that strict parsers reject. Each is a
400 here, before policy, validation or any handler sees the body.
"""

import json
import math

# Deeper than any body the API accepts (a server create is about 5 levels),
# far below the point where recursive code would overflow the stack.
MAX_DEPTH = 32


class BadBody(ValueError):
    """The body is not JSON the API accepts; the message says why."""


def _refuse_constant(name):
    raise BadBody(f"{name} is not a JSON number")


def _bad_string(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check(document, max_depth: int = MAX_DEPTH) -> None:
    """Raise BadBody when ``document`` is too deep or holds an unsafe value.

    Iterative on purpose: a recursive walk would fail the way the body is
    meant to be refused for.
    """
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > max_depth:
                raise BadBody(f"nested deeper than {max_depth} levels")
            for key, item in value.items():
                if _bad_string(key):
                    raise BadBody("a key is not valid UTF-8 (lone surrogate)")
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            if depth > max_depth:
                raise BadBody(f"nested deeper than {max_depth} levels")
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            if _bad_string(value):
                raise BadBody("a string is not valid UTF-8 (lone surrogate)")
        elif isinstance(value, float) and not math.isfinite(value):
            raise BadBody("numbers must be finite")


def parse(raw: bytes, max_depth: int = MAX_DEPTH):
    """The JSON document in ``raw``, checked by :func:`check`; BadBody otherwise."""
    try:
        document = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadBody(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, BadBody
        raise BadBody(str(exc)) from None
    check(document, max_depth)
    return document
