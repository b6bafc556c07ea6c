"""The microversion list and its constants, negotiation, version_handler windows."""

import os
import re

import pytest

from volumesvc.api import microversions as mv
from volumesvc.api import versioned
from volumesvc.api.handlers import services  # noqa: F401 - registers versioned handlers

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
NAMED_BY_CONTRACT = (
    "2.1 2.3 2.9 2.11 2.16 2.19 2.20 2.26 2.27 2.32 2.33 2.37 2.42 2.45 2.47 2.49 2.51 "
    "2.53 2.58 2.60 2.62 2.63 2.67 2.70 2.71 2.73 2.75 2.79 2.84 2.85 2.89 2.90 2.93 2.96 "
    "2.98 2.100 2.101 2.102 2.104 2.105 2.106 2.107 2.108").split()


def test_the_maximum_is_2_108():
    """The one literal of the maximum: a new microversion changes it on purpose.

    Every other test derives the maximum from ``mv.MAX_VERSION``.
    """
    assert str(mv.MAX_VERSION) == "2.108"


def test_every_step_from_2_1_to_max_is_listed_once():
    versions = [v for v, _, _ in mv.VERSIONS]
    assert versions == [f"2.{n}" for n in range(1, mv.MAX_VERSION.minor + 1)]
    assert str(mv.MIN_VERSION) == "2.1"
    assert set(NAMED_BY_CONTRACT) <= set(versions)


def test_constants_are_unique_and_named_after_their_version():
    names = [name for _, name, _ in mv.VERSIONS]
    assert len(names) == len(set(names))
    for version, name, summary in mv.VERSIONS:
        assert name.startswith("V" + version.replace(".", "_") + "_")
        assert summary and "\n" not in summary


def _module_constants(module):
    """Every ``V<major>_<minor>_*`` name bound at module level, with its value."""
    return {name: value for name, value in vars(module).items()
            if re.match(r"^V\d+_\d+_", name)}


def test_module_constants_match_versions_one_to_one():
    listed = {name: mv.parse(version) for version, name, _ in mv.VERSIONS}
    constants = _module_constants(mv)
    assert sorted(constants) == sorted(listed), "constant without entry, or entry without one"
    for name, value in listed.items():
        assert constants[name] == value, name
        assert isinstance(constants[name], mv.Version), name
    assert len(set(constants.values())) == len(constants), "two constants share a version"


def test_constant_check_catches_an_extra_constant(monkeypatch):
    monkeypatch.setattr(mv, "V2_999_PROBE", mv.Version(2, 999), raising=False)
    listed = {name for _, name, _ in mv.VERSIONS}
    assert set(_module_constants(mv)) - listed == {"V2_999_PROBE"}


@pytest.mark.parametrize("headers, expected", [
    ({}, "2.1"),
    ({"X-OpenStack-Nova-API-Version": "2.60"}, "2.60"),
    ({"X-OpenStack-Nova-API-Version": "2.3, 2.9"}, "2.9"),
    ({"OpenStack-API-Version": "compute 2.89"}, "2.89"),
    ({"OpenStack-API-Version": "compute 2.53", "X-OpenStack-Nova-API-Version": "2.11"}, "2.53"),
    ({"OpenStack-API-Version": "compute 2.20, volume 3.7, compute 2.27"}, "2.27"),
    ({"OpenStack-API-Version": "volume 3.7", "X-OpenStack-Nova-API-Version": "2.42"}, "2.42"),
    ({"OpenStack-API-Version": "compute latest"}, str(mv.MAX_VERSION)),
    ({"X-OpenStack-Nova-API-Version": "latest"}, str(mv.MAX_VERSION)),
])
def test_negotiate(headers, expected):
    assert str(mv.negotiate(headers)) == expected


@pytest.mark.parametrize("value", ["2.01", "02.1", "2", "2.", "Latest", "2.1.1", "x"])
def test_malformed_is_invalid(value):
    with pytest.raises(mv.InvalidVersion):
        mv.negotiate({"X-OpenStack-Nova-API-Version": value})


@pytest.mark.parametrize("value", [
    "2.0", f"2.{mv.MAX_VERSION.minor + 1}", "2.200", "3.0", "1.1"])
def test_out_of_range_keeps_requested_version(value):
    with pytest.raises(mv.UnsupportedVersion) as info:
        mv.negotiate({"OpenStack-API-Version": f"compute {value}"})
    assert str(info.value.version) == value


def test_response_headers_echo_and_vary_both():
    headers = mv.response_headers(mv.parse("2.60"))
    assert ("OpenStack-API-Version", "compute 2.60") in headers
    assert ("X-OpenStack-Nova-API-Version", "2.60") in headers
    assert [v for k, v in headers if k == "Vary"] == [
        "OpenStack-API-Version", "X-OpenStack-Nova-API-Version"]


def test_versioned_handler_windows_do_not_overlap():
    assert versioned.VERSIONED_METHODS, "no versioned handlers registered"
    assert versioned.overlapping_windows() == []


def test_overlap_detection_works():
    key_before = set(versioned.VERSIONED_METHODS)

    @versioned.version_handler(mv.parse("2.1"), mv.parse("2.10"))
    def probe(req):
        pass

    @versioned.version_handler(mv.parse("2.10"))  # noqa: F811 - overlaps at 2.10
    def probe(req):  # noqa: F811
        pass

    try:
        assert versioned.overlapping_windows() == [f"{__name__}.{probe.__qualname__}"]
    finally:
        for key in set(versioned.VERSIONED_METHODS) - key_before:
            del versioned.VERSIONED_METHODS[key]


def test_history_doc_has_a_section_per_version():
    path = os.path.join(ROOT, "doc/source/reference/api-version-history.rst")
    with open(path) as handle:
        text = handle.read()
    sections = re.findall(r"^(\d+\.\d+): ``(V\w+)``\n-+$", text, re.MULTILINE)
    assert sections == [(v, name) for v, name, _ in mv.VERSIONS]


def test_latest_api_test_reports_max():
    """The API test compares with mv.MAX_VERSION, never a literal of the maximum."""
    path = os.path.join(ROOT, "tests", "functional", "api", "test_microversions.py")
    with open(path) as handle:
        text = handle.read()
    assert "MAX = str(mv.MAX_VERSION)" in text
    assert 'resp.headers["openstack-api-version"] == f"compute {MAX}"' in text
    assert "maximum is {MAX}." in text
    assert f"maximum is {mv.MAX_VERSION}." not in text
