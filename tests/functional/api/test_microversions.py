"""Microversion negotiation and echo (doc/source/contributor/contract.rst §1.2, §1.3) on /v2.1/.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.journeys import at_version
from volumesvc.api import microversions as mv

world = fixtures.World  # the world of the client fixture (conftest.py)

MAX = str(mv.MAX_VERSION)
ABOVE_MAX = f"{mv.MAX_VERSION.major}.{mv.MAX_VERSION.minor + 1}"
HEADERS = {"accept": "application/json"}


def test_no_header_means_2_1(client):
    """No header means 2.1."""
    resp = client.get("/v2.1/", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.1"
    assert resp.headers["x-openstack-nova-api-version"] == "2.1"
    # Two Vary headers, one for each version header.
    assert resp.headers.getlist("vary") == ["OpenStack-API-Version",
                                            "X-OpenStack-Nova-API-Version"]


def test_legacy_header_is_echoed_exactly(client):
    """Legacy header is echoed exactly."""
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": "2.60"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.60"
    assert resp.headers["x-openstack-nova-api-version"] == "2.60"


def test_legacy_header_last_comma_value_counts(client):
    """Legacy header last comma value counts."""
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": "2.3, 2.9"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["x-openstack-nova-api-version"] == "2.9"


def test_new_header(client):
    """New header."""
    resp = client.get("/v2.1/", headers=at_version(HEADERS, "2.89"))
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.89"
    assert resp.headers["x-openstack-nova-api-version"] == "2.89"


@pytest.mark.parametrize("versions, expected", [
    pytest.param({"openstack-api-version": "compute 2.53", "x-openstack-nova-api-version": "2.11"},
                 "compute 2.53", id="new_header_wins_over_legacy"),
    pytest.param({"openstack-api-version":
                  "compute 2.20, volume 3.71, compute 2.27, placement 1.30"},
                 "compute 2.27",
                 id="new_header_other_services_ignored_and_last_compute_pair_counts"),
    pytest.param({"openstack-api-version": "volume 3.71", "x-openstack-nova-api-version": "2.42"},
                 "compute 2.42", id="new_header_without_compute_falls_back_to_legacy"),
])
def test_negotiated(client, versions, expected):
    resp = client.get("/v2.1/", headers={**HEADERS, **versions})
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == expected


def test_latest_is_the_maximum(client):
    """Latest is the maximum."""
    resp = client.get("/v2.1/", headers={**HEADERS, "openstack-api-version": "compute latest"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == f"compute {MAX}"
    assert resp.headers["x-openstack-nova-api-version"] == MAX


def test_legacy_latest_is_the_maximum(client):
    """Legacy latest is the maximum."""
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": "latest"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["x-openstack-nova-api-version"] == MAX


@pytest.mark.parametrize("legacy, status", [
    pytest.param("2.105", 200, id="every_step_in_range_is_valid"),
    # 2.105 to 2.108 are volumesvc's own (extend completion; attachment status;
    # idempotent attach; read-only attachments).
    pytest.param(MAX, 200, id="maximum_exactly"),
    pytest.param("Latest", 400, id="latest_with_capital_l_is_malformed"),
])
def test_legacy_status(client, legacy, status):
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": legacy})
    assert resp.status_code == status, resp.text


def test_the_first_version_above_the_maximum_is_not_served(client):
    """The first version above the maximum is not served."""
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": ABOVE_MAX})
    assert resp.status_code == 406, resp.text
    assert resp.json["computeFault"]["message"] == (
        f"Version {ABOVE_MAX} is not supported by the API. Minimum is 2.1 and maximum is {MAX}.")


def test_malformed_version_is_400_without_version_headers(client):
    """Malformed version is 400 without version headers."""
    resp = client.get("/v2.1/", headers=at_version(HEADERS, "2.01"))
    assert resp.status_code == 400, resp.text
    assert re.search("^req-", resp.headers["x-openstack-request-id"])
    assert "openstack-api-version" not in resp.headers
    assert "x-openstack-nova-api-version" not in resp.headers
    assert resp.json["badRequest"]["code"] == 400
    assert re.search("API Version String 2.01 is of invalid format",
                     str(resp.json["badRequest"]["message"]))


def test_out_of_range_is_406_and_echoes_the_request(client):
    """Out of range is 406 and echoes the request."""
    resp = client.get("/v2.1/", headers={**HEADERS, "x-openstack-nova-api-version": "2.200"})
    assert resp.status_code == 406, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.200"
    assert resp.headers["x-openstack-nova-api-version"] == "2.200"
    # Two Vary headers, one for each version header.
    assert resp.headers.getlist("vary") == ["OpenStack-API-Version",
                                            "X-OpenStack-Nova-API-Version"]
    assert resp.json["computeFault"]["code"] == 406
    assert resp.json["computeFault"]["message"] == (
        f"Version 2.200 is not supported by the API. Minimum is 2.1 and maximum is {MAX}.")


def test_below_minimum_is_406(client):
    """Below minimum is 406."""
    resp = client.get("/v2.1/", headers=at_version(HEADERS, "2.0"))
    assert resp.status_code == 406, resp.text
    assert resp.json["computeFault"]["code"] == 406


def test_headers_are_echoed_on_a_404(client):
    """Headers are echoed on a 404."""
    resp = client.get("/v2.1/no-such-thing", headers=at_version(HEADERS, "2.70"))
    assert resp.status_code == 404, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.70"
    assert resp.headers["x-openstack-nova-api-version"] == "2.70"
    assert re.search("^req-", resp.headers["x-compute-request-id"])


def test_headers_are_echoed_on_a_401(client):
    """Headers are echoed on a 401."""
    resp = client.get("/v2.1/os-services", headers=at_version(HEADERS, "2.53"))
    assert resp.status_code == 401, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.53"

