"""Cinder/Glance sessions skip requests' per-request environment lookups that find nothing."""

import pytest

from volumesvc.common import keystone
from volumesvc.conf import get_conf
from volumesvc.volume import cinder


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY",
                 "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE",
                 "CURL_CA_BUNDLE", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _session():
    return cinder.CinderAPI(get_conf(args=[], default_config_files=[]))._get_session()


def test_nothing_in_the_environment_turns_the_lookups_off(clean_env):
    assert _session().session.trust_env is False


@pytest.mark.parametrize("name,value", [
    ("https_proxy", "http://proxy:3128"), ("HTTP_PROXY", "http://proxy:3128"),
    ("no_proxy", "localhost"), ("NETRC", "/x")], ids=["lower", "upper", "noproxy", "netrc"])
def test_a_proxy_or_netrc_keeps_them(clean_env, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert _session().session.trust_env is True


def test_a_netrc_file_keeps_them(clean_env):
    (clean_env / ".netrc").write_text("machine cinder login a password b\n")
    assert keystone.uses_proxies_or_netrc({}) is True
    assert _session().session.trust_env is True


@pytest.mark.parametrize("env,verify", [
    ({"CURL_CA_BUNDLE": "/c.pem"}, "/c.pem"),
    ({"REQUESTS_CA_BUNDLE": "/r.pem", "CURL_CA_BUNDLE": "/c.pem"}, "/r.pem"),
    ({}, True)], ids=["curl", "requests-first", "none"])
def test_a_ca_bundle_from_the_environment_still_verifies(clean_env, monkeypatch, env, verify):
    """What requests did per request (bundle instead of the default), set once."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    session = _session()
    assert session.session.trust_env is False and session.verify == verify


def test_an_explicit_cafile_or_insecure_wins(clean_env):
    class Session:
        verify = False
        session = type("Http", (), {"trust_env": True})()
    for verify in (False, "/own.pem"):
        session = Session()
        session.verify = verify
        keystone.without_environment_lookups(session, {"REQUESTS_CA_BUNDLE": "/r.pem"})
        assert session.verify == verify and session.session.trust_env is False


def test_empty_proxy_variables_are_ignored(clean_env):
    assert keystone.uses_proxies_or_netrc({"http_proxy": "", "PATH": "/bin"}) is False
