"""One INFO line per API request (method, path, status, microversion, time, ids)."""

import logging
import re

import pytest

from volumesvc.api import routes
from volumesvc.serving import requestlog

LINE = re.compile(
    r'^(?P<remote>\S+) "(?P<method>\S+) (?P<path>\S+)" status: (?P<status>\d{3}) '
    r"len: (?P<len>\S+) microversion: (?P<mv>\S+) time: (?P<time>\d+\.\d{6}) "
    r"request_id: (?P<rid>\S+) project: (?P<project>\S+)$")


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger=requestlog.LOG.name)

    def parsed():
        return [LINE.match(r.getMessage()).groupdict() for r in caplog.records
                if r.name == requestlog.LOG.name and r.levelno == logging.INFO]
    return parsed


def test_one_line_per_request_with_every_field(stack, lines):
    resp = stack.client.get("/v2.1/abc1/servers?limit=1", headers={
        "X-Auth-Token": "alice:abc1", "OpenStack-API-Version": "compute 2.90"})
    assert resp.status_code == 200
    [line] = lines()
    assert line["method"] == "GET" and line["path"] == "/v2.1/abc1/servers?limit=1"
    assert line["status"] == "200" and line["mv"] == "2.90" and line["project"] == "abc1"
    assert line["rid"] == resp.headers["X-OpenStack-Request-ID"]
    assert line["len"] == resp.headers["Content-Length"]
    assert float(line["time"]) > 0


def test_refusals_are_logged_too(stack, lines):
    stack.client.get("/v2.1/servers")  # no token: 401
    stack.client.get("/v2.1/servers", headers={
        "X-Auth-Token": "a:p", "OpenStack-API-Version": "compute 9.9"})  # 406
    stack.client.get("/", headers={"X-Auth-Token": "a:p"})
    got = [(line["status"], line["mv"], line["project"]) for line in lines()]
    # "/" is outside /v2: no token is read there, no microversion negotiated.
    assert got == [("401", "2.1", "-"), ("406", "-", "p"), ("200", "-", "-")]


def test_a_newline_in_the_path_stays_on_one_line(stack, caplog, lines):
    stack.client.get("/v2.1/servers/x%0aFAKE", headers={"X-Auth-Token": "a:p"})
    [line] = lines()
    assert line["status"] == "404" and "\n" not in line["path"]


def test_health_probes_are_not_logged(stack, lines):
    assert stack.client.get("/healthcheck").status_code == 200
    assert lines() == []


@pytest.mark.parametrize("rule, route", [
    ("/v2.1/<project_id>/servers/<server_id>", "/v2.1/servers/{server_id}"),
    ("/v2.1/servers/<server_id>", "/v2.1/servers/{server_id}"),
    ("/", "/"),
])
def test_route_template(rule, route):
    assert routes.route_template(rule) == route
