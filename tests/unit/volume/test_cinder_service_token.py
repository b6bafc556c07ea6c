"""[service_user]: the Cinder adapter's requests carry a service token when asked to.

Cinder's attachment-delete guard accepts volumesvc's own detach only with an
``X-Service-Token`` of a ``service`` user; keystoneauth's wrapper adds it.
Nothing is sent here: the test looks at the auth plugin each call gets.
"""

from keystoneauth1 import service_token, token_endpoint

from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.volume import cinder

ENDPOINT = "http://127.0.0.1:8776/v3/6f0c3b1e2a4d4c5b9e8f7a6b5c4d3e2f"


def _conf(send):
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "keystone", "cinder")
    conf.set_override("send_service_user_token", send, "service_user")
    conf.set_override("auth_type", "password", "service_user")
    return conf


def _ctx():
    return RequestContext(user_id="u", project_id="6f0c3b1e2a4d4c5b9e8f7a6b5c4d3e2f",
                          auth_token="user-token")


def test_the_users_token_is_wrapped_with_the_service_users(monkeypatch):
    conf = _conf(True)
    loaded = []

    def fake_load(conf_, group):
        loaded.append(group)
        return token_endpoint.Token(ENDPOINT, "service-token")

    monkeypatch.setattr(cinder.ks_loading, "load_auth_from_conf_options", fake_load)
    api = cinder.CinderAPI(conf)
    first = api._auth(_ctx(), ENDPOINT)
    assert isinstance(first, service_token.ServiceTokenAuthWrapper)
    assert first.user_auth.get_token(None) == "user-token"
    assert first.service_auth.get_token(None) == "service-token"
    api._auth(_ctx(), ENDPOINT)
    # Loaded once per adapter: its token is reused until it expires.
    assert loaded == ["service_user"]


def test_no_service_token_unless_configured():
    auth = cinder.CinderAPI(_conf(False))._auth(_ctx(), ENDPOINT)
    assert isinstance(auth, token_endpoint.Token)
    assert auth.get_token(None) == "user-token"


def test_no_auth_type_sends_the_users_token_alone(caplog):
    # Asked to send a service token but given no [service_user] auth_type:
    # keystoneauth loads no plugin, and wrapping None failed on every request.
    conf = _conf(True)
    conf.clear_override("auth_type", "service_user")
    api = cinder.CinderAPI(conf)
    for _ in range(3):
        auth = api._auth(_ctx(), ENDPOINT)
        assert isinstance(auth, token_endpoint.Token)
        assert auth.get_token(None) == "user-token"
    # A deployment fact, said once per adapter rather than on every request.
    assert [r.getMessage() for r in caplog.records].count(
        "[service_user] send_service_user_token is set but [service_user] auth_type is "
        "not: no service token sent (volumesvc-status upgrade check fails on this)") == 1


def test_service_tokens_are_on_by_default():
    """Cinder deployments fixed for CVE-2023-2088 expect them (as Nova sends them)."""
    assert get_conf(default_config_files=[]).service_user.send_service_user_token is True
