"""What the all-in-one writes so that Cinder, the computes and Barbican agree on keys.

No process starts here: the harness and the config writer only render files,
read back with volumesvc's own options (a typo in a group or option fails) or
configparser; the two noauth filters are plain WSGI and run on a tiny app.
"""

import configparser
import importlib
import os
import stat

import pytest
from castellan import options as castellan_options
from keystoneauth1 import loading as ks_loading

from volumesvc.conf import get_conf
from volumesvc_aio import barbican, cinder, config, keystone


def _plugin(monkeypatch, name):
    """A module of the plugins directory (it runs in the services' own venvs, not ours)."""
    monkeypatch.syspath_prepend(barbican.PLUGINS_DIR)
    return importlib.import_module(name)

UPSTREAM_PASTE = """[composite:main]
use = egg:Paste#urlmap
/: barbican_version
/v1: barbican-api-keystone

[pipeline:barbican_api]
pipeline = cors request_id http_proxy_to_wsgi unauthenticated-context microversion apiapp

[pipeline:barbican-api-keystone]
pipeline = cors request_id http_proxy_to_wsgi authtoken context microversion apiapp
"""


def _ini(text):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return parser


def test_the_key_encryption_key_is_private_random_and_kept_for_the_state_dir(tmp_path):
    one = barbican.BarbicanHarness(str(tmp_path / "a"), port=1)
    kek = one.kek
    path = os.path.join(one.state_dir, "simple_crypto_kek")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert barbican.BarbicanHarness(str(tmp_path / "a"), port=1).kek == kek
    assert barbican.BarbicanHarness(str(tmp_path / "b"), port=1).kek != kek
    conf = _ini(one.config_text())
    assert conf["simple_crypto_plugin"]["kek"] == kek
    assert conf["crypto"]["enabled_crypto_plugins"] == "simple_crypto"
    assert conf["database"]["connection"] == f"sqlite:///{one.state_dir}/barbican.sqlite"


def test_without_keystone_v1_runs_the_unauthenticated_pipeline_behind_our_filter(tmp_path):
    paste = _ini(barbican.BarbicanHarness(str(tmp_path), port=1).paste_text(UPSTREAM_PASTE))
    assert paste["composite:main"]["/v1"] == "barbican_api"
    pipeline = paste["pipeline:barbican_api"]["pipeline"].split()
    assert pipeline.index("volumesvc_noauth") + 1 == pipeline.index("unauthenticated-context")
    assert paste["filter:volumesvc_noauth"]["paste.filter_factory"].startswith(
        "volumesvc_barbican_plugins.noauth:")


def test_with_keystone_barbican_validates_tokens_as_its_own_user(tmp_path):
    ks = keystone.KeystoneHarness(str(tmp_path / "keystone"), port=5999)
    harness = barbican.BarbicanHarness(str(tmp_path / "barbican"), port=1, keystone=ks)
    assert harness.paste_text(UPSTREAM_PASTE) == UPSTREAM_PASTE
    assert _ini(harness.config_text())["keystone_authtoken"]["username"] == "barbican"
    assert "barbican" in keystone.USERS


def _seen():
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        return [b""]

    return seen, app


def test_the_barbican_filter_names_the_project_of_the_noauth_token(monkeypatch):
    noauth = _plugin(monkeypatch, "volumesvc_barbican_plugins.noauth")
    seen, app = _seen()
    noauth.filter_factory({})(app)({"HTTP_X_AUTH_TOKEN": "demo:p1",
                                    "openstack.request_id": "req-1"}, None)
    assert (seen["HTTP_X_USER_ID"], seen["HTTP_X_PROJECT_ID"]) == ("demo", "p1")
    assert seen["HTTP_X_ROLES"] == "member,reader"
    assert "HTTP_X_AUTH_TOKEN" not in seen
    assert seen["webob.adhoc_attrs"]["request_id"] == "req-1"
    noauth.filter_factory({})(app)({"HTTP_X_AUTH_TOKEN": "admin"}, None)
    assert seen["HTTP_X_PROJECT_ID"] == "admin" and "admin" in seen["HTTP_X_ROLES"]


def test_the_cinder_filter_puts_the_noauth_token_back_on_the_context(monkeypatch):
    noauth_token = _plugin(monkeypatch, "volumesvc_cinder_plugins.noauth_token")

    class Context:
        auth_token = None

    context = Context()
    _, app = _seen()
    noauth_token.filter_factory({})(app)({"HTTP_X_AUTH_TOKEN": "demo:p1",
                                          "cinder.context": context}, None)
    assert context.auth_token == "demo:p1"


@pytest.mark.parametrize("with_keystone", [False, True])
def test_cinder_and_the_computes_use_the_same_barbican(tmp_path, with_keystone):
    ks = keystone.KeystoneHarness(str(tmp_path / "ks"), port=5999) if with_keystone else None
    url = "http://127.0.0.1:9399"
    volume = cinder.CinderHarness(str(tmp_path / "cinder"), port=1, transport_url="rabbit://",
                                  keystone=ks, key_manager_url=url)
    cinder_conf = _ini(volume.config_text())
    assert cinder_conf["key_manager"]["backend"] == "barbican"
    assert cinder_conf["barbican"]["barbican_endpoint"] == url
    path = config.write_config(str(tmp_path), transport_url="rabbit://", api_port=1,
                               api_workers=1, host="h", cinder_url="http://c/v3",
                               glance_url="http://g", keystone=ks, key_manager_url=url)
    conf = get_conf(["--config-file", path], default_config_files=[])
    castellan_options.set_defaults(conf)
    assert conf.key_manager.backend == "barbican"
    assert conf.barbican.barbican_endpoint == url
    assert conf.barbican.send_service_user_token is with_keystone
    # A boot onto rbd-luks waits for Cinder's LUKS container: longer than 180 s.
    assert conf.compute.volume_wait_timeout == 900
    if with_keystone:
        assert conf.barbican.auth_endpoint == ks.url
        ks_loading.load_auth_from_conf_options(conf, "barbican_service_user")
        assert conf.barbican_service_user.username == "volumesvc"

