"""Entry points: config discovery of init_application, version_handler dispatch."""

import flask
import pytest

from volumesvc.api import microversions as mv
from volumesvc.api import versioned
from volumesvc.serving import app as serving_app
from volumesvc.serving import bootstrap, server


def test_config_args_prefer_command_line(monkeypatch, tmp_path):
    monkeypatch.setenv(bootstrap.CONFIG_ENV, str(tmp_path / "missing.conf"))
    assert bootstrap.config_args(["-b", "x", "--config-file", "/a.conf"]) == [
        "--config-file", "/a.conf"]
    assert bootstrap.config_args(["--config-file=/b.conf"]) == ["--config-file=/b.conf"]
    assert bootstrap.config_args([]) == []


def test_init_application_reads_env_config(monkeypatch, tmp_path):
    conf_file = tmp_path / "volumesvc.conf"
    conf_file.write_text("[api]\nauth_strategy = noauth2\n")
    monkeypatch.setenv(bootstrap.CONFIG_ENV, str(conf_file))
    app = serving_app.init_application(bootstrap.load_conf([]))
    assert app.extensions["volumesvc"].conf.api.auth_strategy == "noauth2"
    assert app.test_client().get("/").status_code == 200


@pytest.mark.parametrize("version, outcome", [("2.1", 404), ("2.9", 404), ("2.10", "old"),
                                              ("2.19", "old"), ("2.20", "new")])
def test_version_handler_dispatch(version, outcome):
    before = set(versioned.VERSIONED_METHODS)

    @versioned.version_handler(mv.parse("2.10"), mv.parse("2.19"))
    def show_probe():
        return "old"

    @versioned.version_handler(mv.parse("2.20"))  # noqa: F811
    def show_probe():  # noqa: F811
        return "new"

    try:
        with flask.Flask("t").app_context():
            flask.g.microversion = mv.parse(version)
            if outcome == 404:
                with pytest.raises(versioned.VersionNotAvailable) as info:
                    show_probe()
                assert info.value.status_code == 404
            else:
                assert show_probe() == outcome
    finally:
        for key in set(versioned.VERSIONED_METHODS) - before:
            del versioned.VERSIONED_METHODS[key]


def test_overrides_do_not_leak_between_fresh_configs():
    from volumesvc.conf import get_conf

    first = get_conf(default_config_files=[])
    first.set_override("auth_strategy", "noauth2", group="api")
    assert get_conf(default_config_files=[]).api.auth_strategy == "keystone"


def test_gunicorn_recycles_workers_as_configured():
    from volumesvc.conf import get_conf

    conf = get_conf(default_config_files=[])
    settings = server.gunicorn_settings(conf)
    assert settings["max_requests"] == conf.wsgi.max_requests > 0
    assert 0 < settings["max_requests_jitter"] == conf.wsgi.max_requests_jitter
    assert settings["preload_app"] is True  # a recycled worker is a fork of the loaded app
    conf.set_override("max_requests", 0, group="wsgi")
    conf.set_override("threads", 1, group="wsgi")
    settings = server.gunicorn_settings(conf)
    assert settings["max_requests"] == 0
    assert settings["worker_class"].endswith("SyncWorker")


def test_gunicorn_trusts_forwarded_headers_only_from_the_named_proxies():
    from gunicorn.config import Config

    from volumesvc.conf import get_conf

    conf = get_conf(default_config_files=[])
    conf.set_override("trusted_proxies", ["192.0.2.10", "198.51.100.0/24"], group="wsgi")

    def allowed():
        cfg = Config()
        value = server.gunicorn_settings(conf)["forwarded_allow_ips"]
        cfg.set("forwarded_allow_ips", value)  # gunicorn's own validation
        return cfg.forwarded_allow_ips

    # Off: nobody, not even loopback (gunicorn's default), whatever the list says.
    assert allowed() == []
    conf.set_override("enable_proxy_headers_parsing", True, group="oslo_middleware")
    assert allowed() == ["192.0.2.10/32", "198.51.100.0/24"]
    conf.set_override("trusted_proxies", [], group="wsgi")
    assert allowed() == []


def test_a_malformed_trusted_proxy_is_refused_at_startup():
    from volumesvc.conf import get_conf

    conf = get_conf(default_config_files=[])
    conf.set_override("enable_proxy_headers_parsing", True, group="oslo_middleware")
    conf.set_override("trusted_proxies", ["192.0.2.10/24"], group="wsgi")
    with pytest.raises(ValueError, match=r"\[wsgi\] trusted_proxies"):
        server.gunicorn_settings(conf)


def test_server_options_written_under_api_still_configure_gunicorn(tmp_path):
    """Configs from before [wsgi] held the server options name them under [api]."""
    from volumesvc.conf import get_conf

    path = tmp_path / "volumesvc.conf"
    path.write_text("[api]\nworkers = 5\nthreads = 3\nkeepalive = 9\n"
                    "[wsgi]\nthreads = 4\n")
    conf = get_conf(["--config-file", str(path)], default_config_files=[])
    settings = server.gunicorn_settings(conf)
    assert (settings["workers"], settings["keepalive"]) == (5, 9)
    # Where both groups set an option, [wsgi] wins.
    assert settings["threads"] == 4
    # [api] holds the REST API's options only.
    assert "workers" not in conf.api and "listen_port" not in conf.api
