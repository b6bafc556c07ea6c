"""jsonbody.parse: what json.loads lets through and the API must not."""

import pytest

from volumesvc.api import jsonbody


@pytest.mark.parametrize("raw", [
    b"[" * 3000 + b"]" * 3000,
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b"[" * (jsonbody.MAX_DEPTH + 1) + b"]" * (jsonbody.MAX_DEPTH + 1),
    b'"\\ud800"', b'{"\\udfff": 1}', b'{"a": ["x\\ud800y"]}',
    b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"1e999", b"-1e999",
    b"\xff\xfe\x00", b"{", b"",
], ids=lambda raw: repr(raw[:12]).replace(":", "_"))
def test_refused(raw):
    with pytest.raises(jsonbody.BadBody):
        jsonbody.parse(raw)


@pytest.mark.parametrize("raw,value", [
    (b"[" * jsonbody.MAX_DEPTH + b"]" * jsonbody.MAX_DEPTH, None),
    (b'{"name": "\\ud83d\\ude00"}', {"name": "\U0001f600"}),
    (b'{"n": 1.5e300, "i": 1' + b"0" * 400 + b"}", {"n": 1.5e300, "i": 10 ** 400}),
    (b"null", None),
], ids=["at-the-cap", "surrogate-pair", "big-numbers", "null"])
def test_accepted(raw, value):
    parsed = jsonbody.parse(raw)
    if value is not None:
        assert parsed == value
