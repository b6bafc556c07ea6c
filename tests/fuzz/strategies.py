"""Hypothesis strategies for hostile requests, derived from a route's own schemas.

A request is drawn in layers: the microversion (any, or a garbage header),
the caller, the URL (placeholders filled with known ids, other projects'
ids, or junk), the query string (the route's query schema for that version,
then perhaps broken) and the body (the route's body schema for that version
via hypothesis-jsonschema, then perhaps broken, or raw bytes that are not
JSON the API accepts). Nothing here names a route: a route added to
``api/routes.py`` with its schemas is fuzzed as it is.
"""

import functools
import json
import math
from urllib.parse import quote, urlencode  # noqa: F401 - quote is used by the tests too

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from tests.fuzz import world as world_mod
from volumesvc.api import microversions as mv
from volumesvc.api import validation

VERSIONS = [mv.Version(2, minor) for minor in range(mv.MIN_VERSION.minor,
                                                       mv.MAX_VERSION.minor + 1)]

# --- leaves -----------------------------------------------------------------------------

EDGE_STRINGS = st.sampled_from([
    "", " ", "\x00", "\n", "x\r\nSet-Cookie: a=b", "\ud800", "\udfff", "\U0001f600",
    "\u202e", "\ufeff", "%", "%0a", "%00", "../../etc/passwd", "<script>", "'; --",
    "9" * 400, "9" * 5000, "1" + "0" * 400, "-1", "0", "2147483648",
    "18446744073709551616", "1e999", "NaN", "Infinity", "true", "null",
    "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "a" * 70000,
])
EDGE_NUMBERS = st.sampled_from([
    0, -1, 1, 2 ** 31, 2 ** 31 - 1, 2 ** 63, 2 ** 64, 10 ** 400, -(10 ** 400),
    0.5, 1e308, -1e308, 5e-324, 3.5e38,
])
# Values for a list filter that reached the database unchecked once (500s):
# patterns that are no regular expression or too large to run, patterns
# only a backtracking engine runs or that backtrack for ever (against the
# world's BACKTRACKING_NAME), and integers past 32 and 64 bits, signed and
# past int()'s 4300 digits. Every filter of every list route gets each one
# (test_filters.py), and the generated queries draw from them too.
HOSTILE_FILTER_VALUES = (
    "(" * 36, "a{99999999999}", "[^a]{1000}" * 10, "(a)\\1", "(?=a)", "^(a+)+$",
    "99999999999999999999999", str(2 ** 31), str(2 ** 63), str(-(2 ** 64)), "9" * 5000,
)
FILTER_VALUES = st.sampled_from(HOSTILE_FILTER_VALUES)
_text = st.text(max_size=40)
SCALARS = st.one_of(EDGE_STRINGS, EDGE_NUMBERS, st.booleans(), st.none(), _text,
                    st.integers(), st.floats(allow_nan=False, allow_infinity=False))
JUNK_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=12)
# What replaces a part of a valid document: mostly the known troublemakers.
BAD_VALUES = st.one_of(EDGE_STRINGS, EDGE_STRINGS, EDGE_NUMBERS, JUNK_VALUES)


def deep(depth, kind):
    return "[" * depth + "]" * depth if kind == "list" else \
        '{"a":' * depth + "1" + "}" * depth


RAW_BODIES = st.one_of(
    st.sampled_from([
        b"", b"{", b"[]", b"null", b"0", b'"x"', b"NaN", b'{"a": Infinity}',
        b'{"a": 1e999}', b'{"\\ud800": 1}', b'{"a": "\\udfff"}', b"\xff\xfe\xfd",
        b'{"a": 1' + b"0" * 5000 + b"}", b"{}" * 3, b'{"a": 1, "a": 2}',
    ]),
    st.builds(lambda depth, kind: deep(depth, kind).encode(),
              st.sampled_from([33, 100, 999, 1001, 3000]), st.sampled_from(["list", "dict"])),
    st.binary(max_size=64),
)

# --- microversion, caller, content type -------------------------------------------------

GARBAGE_VERSIONS = st.one_of(
    st.sampled_from(["compute latest", "compute 2.0", "compute 3.1", "compute 2.1.1",
                     "compute 2.999999999999999999999", "compute", "compute -2.1",
                     "volume 2.5", "compute 2.5, compute 2.6", ""]),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
            max_size=30),
)
TOKENS = st.sampled_from([world_mod.ADMIN] * 3 + [world_mod.ALICE] * 3 + [world_mod.BOB] * 2
                         + [None, "x:y:z", ":", "admin"])
CONTENT_TYPES = st.sampled_from(["application/json"] * 6 + [
    None, "text/plain", "application/json; charset=latin-1", "multipart/form-data",
    "application/x-www-form-urlencoded"])


@st.composite
def versions(draw):
    """(version or None, headers): usually a real version, sometimes junk."""
    if draw(st.integers(0, 9)) == 0:
        value = draw(GARBAGE_VERSIONS)
        name = draw(st.sampled_from(["OpenStack-API-Version", "X-OpenStack-Nova-API-Version"]))
        return None, {name: value}
    version = draw(st.sampled_from(VERSIONS))
    return version, {"OpenStack-API-Version": f"compute {version}"}


# --- schema-driven values -----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _from_schema(schema_json: str):
    return from_schema(json.loads(schema_json))


def schema_for(handler, kind, version):
    """The handler's declared ``kind`` schema at ``version`` (None when it has none)."""
    for low, high, schema, _options in getattr(handler, "_schemas", {}).get(kind, []):
        if version is None or low <= version <= high:
            return schema
    return None


def valid(schema):
    return _from_schema(json.dumps(schema, sort_keys=True))


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _replace(document, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {**document, head: _replace(document[head], rest, new)}
    copy = list(document)
    copy[head] = _replace(document[head], rest, new)
    return copy


@st.composite
def mutated(draw, document, known_ids):
    """``document`` with one to three parts broken (see :func:`_mutate_once`)."""
    for _ in range(draw(st.integers(1, 3))):
        document = draw(_mutate_once(document, known_ids))
    return document


@st.composite
def _mutate_once(draw, document, known_ids):
    """One part replaced by a bad value or a known id, an unknown key added, or a key dropped."""
    paths = list(_paths(document))
    path = draw(st.sampled_from(paths))
    choice = draw(st.integers(0, 4))
    if choice == 0 and known_ids:
        return _replace(document, path, draw(st.sampled_from(known_ids)))
    if choice == 1:
        target = document
        for step in path:
            target = target[step]
        if isinstance(target, dict):
            key = draw(st.one_of(EDGE_STRINGS, _text))
            return _replace(document, path, {**target, key: draw(BAD_VALUES)})
    if choice == 2 and path:
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict):
            return _replace(document, path[:-1],
                            {k: v for k, v in parent.items() if k != path[-1]})
    return _replace(document, path, draw(BAD_VALUES))


_ID_KEYS = {"volumeId": "volume", "uuid": "volume", "volume_id": "volume",
            "snapshot_id": "volume", "flavorRef": "flavor", "id": "flavor"}


def anchor(document, ids, draw):
    """Point id-like fields at ids that exist (owned by anyone) some of the time."""
    if isinstance(document, dict):
        out = {}
        for key, value in document.items():
            pool = ids.get(_ID_KEYS.get(key, ""))
            if pool and isinstance(value, (str, int)) and draw(st.booleans()):
                out[key] = draw(st.sampled_from(pool))
            else:
                out[key] = anchor(value, ids, draw)
        return out
    if isinstance(document, list):
        return [anchor(item, ids, draw) for item in document]
    return document


def encode(document) -> bytes:
    """JSON as a client sends it (lone surrogates escaped; non-finite as Python writes)."""
    return json.dumps(document).encode()


@st.composite
def bodies(draw, schema, ids):
    """Raw body bytes: schema-valid, schema-valid then broken, or not acceptable JSON."""
    kind = draw(st.integers(0, 9))
    if schema is None or kind == 0:
        return draw(RAW_BODIES)
    document = anchor(draw(valid(schema)), ids, draw)
    if kind <= 4:
        known = [i for pool in ids.values() for i in pool]
        document = draw(mutated(document, known))
    if kind == 9:
        # Bury the document: deep, but only just past the cap.
        return deep(draw(st.integers(30, 40)), "list").encode()
    return encode(document)


@st.composite
def queries(draw, schema, ids):
    """A query string: from the query schema, perhaps with junk or unknown keys."""
    params = {}
    if schema is not None and draw(st.integers(0, 3)):
        params = draw(valid(schema))
    if draw(st.integers(0, 1)) == 0:
        keys = list((schema or {}).get("properties", {})) or list(params) or ["x"]
        key = draw(st.one_of(st.sampled_from(keys), st.sampled_from(keys), _text))
        value = draw(st.one_of(EDGE_STRINGS, FILTER_VALUES, st.sampled_from(
            [i for pool in ids.values() for i in pool])))
        params[key] = [value]
    pairs = []
    for key, values in params.items():
        for value in values if isinstance(values, list) else [values]:
            pairs.append((encodable(key), encodable(value)))
    return urlencode(pairs, doseq=True)


def list_routes(routes_table):
    """(rule, handler, filter names) of every GET route that declares a query schema."""
    found = []
    for rule, methods in routes_table.items():
        handler = methods.get("GET")
        windows = getattr(handler, "_schemas", {}).get(KIND_QUERY, [])
        names = sorted({name for _low, _high, schema, _options in windows
                        for name in schema.get("properties", {})})
        if names:
            found.append((rule, handler, names))
    return found


def query_windows(handler):
    """The (low, high) microversions of each of ``handler``'s query schemas."""
    return [(low, high) for low, high, _schema, _options
            in getattr(handler, "_schemas", {}).get(KIND_QUERY, [])]


def encodable(value) -> bytes:
    value = value if isinstance(value, str) else json.dumps(value)
    # A lone surrogate cannot go on the wire as UTF-8; send the bytes CESU-8
    # would (percent-encoded), which is what a hostile client can do.
    return value.encode("utf-8", "surrogatepass")


@st.composite
def paths(draw, rule, ids):
    """``rule`` with each ``<placeholder>`` filled (quoted) from known ids or junk."""
    out = []
    for segment in rule.split("/"):
        if segment.startswith("<") and segment.endswith(">"):
            name = segment[1:-1]
            pool = ids.get(name, [])
            value = draw(st.one_of(
                st.sampled_from(pool) if pool else st.nothing(),
                st.sampled_from(pool) if pool else st.nothing(),
                st.uuids().map(str), EDGE_STRINGS, _text))
            segment = quote(encodable(value), safe="")
        out.append(segment)
    return "/".join(out)


def strict_json(data: bytes):
    """Parse as a strict client does: NaN/Infinity are errors."""
    def refuse(name):
        raise ValueError(f"bare {name} in a response")
    return json.loads(data, parse_constant=refuse)


def finite(value) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


KIND_BODY, KIND_QUERY = validation.BODY, validation.QUERY
