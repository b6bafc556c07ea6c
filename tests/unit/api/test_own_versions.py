"""volumesvc's own microversions are advertised only when something serves them.

Nova's versions are taken over as a block; a version of our own is a promise
of behaviour Nova lacks. Each entry of ``mv.OWN_VERSIONS`` must be named in
``SERVED_BY`` below, either as a route of ``api/routes.py`` whose handler is
versioned at exactly that version (a ``version_handler`` window or a schema
range starting there), or as a test function that exercises it and mentions
the version. Re-adding 2.105 therefore means naming its route or test here.
"""

import ast
import pathlib

from tests.unit.api.handler_versions import version_starts
from volumesvc.api import microversions as mv
from volumesvc.api import routes

ROOT = pathlib.Path(__file__).resolve().parents[3]

# version -> ("route", METHOD, path) or ("test", "tests/...py::test_name").
SERVED_BY: dict[str, tuple[str, ...]] = {
    "2.105": ("route", "POST", "/v2.1/os-server-external-events"),
    "2.106": ("route", "GET", "/v2.1/servers/<server_id>/os-volume_attachments"),
    "2.107": ("route", "POST", "/v2.1/servers/<server_id>/os-volume_attachments"),
    "2.108": ("route", "POST", "/v2.1/servers/<server_id>/os-volume_attachments"),
}


def _test_mentions(spec: str, version: str, name: str) -> bool:
    path, _, func = spec.partition("::")
    file = ROOT / path
    if not file.is_file():
        return False
    source = file.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            body = ast.get_source_segment(source, node) or ""
            return version in body or name in body
    return False


def unserved(own_versions, served_by) -> list:
    """Own versions with no route or test that serves them (should be empty)."""
    names = {mv.parse(v): name for v, name, _ in mv.VERSIONS}
    problems = []
    for version in own_versions:
        text = str(version)
        if version not in names:
            problems.append(f"{text}: not in VERSIONS")
            continue
        evidence = served_by.get(text)
        if evidence is None:
            problems.append(f"{text}: no route or test named in SERVED_BY")
        elif evidence[0] == "route":
            _, method, path = evidence
            handler = routes.ROUTES.get(path, {}).get(method)
            if handler is None or version not in version_starts(handler):
                problems.append(f"{text}: {method} {path} is not versioned at {text}")
        elif not _test_mentions(evidence[1], text, names[version]):
            problems.append(f"{text}: {evidence[1]} does not exist or does not use {text}")
    return problems


def test_every_own_version_is_served():
    assert unserved(mv.OWN_VERSIONS, SERVED_BY) == []
    assert set(SERVED_BY) == {str(v) for v in mv.OWN_VERSIONS}


def test_an_own_version_without_evidence_is_caught():
    assert unserved([mv.V2_104_PINNED_AZ_UPDATE], {}) == [
        "2.104: no route or test named in SERVED_BY"]
    assert unserved([mv.Version(2, 999)], {}) == ["2.999: not in VERSIONS"]


def test_route_evidence_must_be_versioned_at_the_version():
    put = ("route", "PUT", "/v2.1/os-services/<service_id>")
    assert unserved([mv.V2_53_SERVICE_UUIDS], {"2.53": put}) == []
    assert unserved([mv.V2_104_PINNED_AZ_UPDATE], {"2.104": put}) == [
        "2.104: PUT /v2.1/os-services/<service_id> is not versioned at 2.104"]


def test_test_evidence_must_exist_and_use_the_version():
    here = "tests/unit/api/test_own_versions.py"
    assert unserved([mv.V2_53_SERVICE_UUIDS], {
        "2.53": ("test", f"{here}::test_route_evidence_must_be_versioned_at_the_version")}) == []
    assert unserved([mv.V2_53_SERVICE_UUIDS], {
        "2.53": ("test", f"{here}::test_no_such_test")}) == [
        f"2.53: {here}::test_no_such_test does not exist or does not use 2.53"]
