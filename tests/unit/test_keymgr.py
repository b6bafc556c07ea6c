"""The key manager adapter: keys read as the user, every failure a named 4xx or 5xx.

Most cases run on the in-memory key manager of tests/fixtures/keymgr.py behind
the adapter; the last ones go through castellan's real Barbican backend
(loaded from ``[key_manager] backend`` as in production) to a port on this
machine where nothing listens, and to a keystone-less context.
"""

import http.server
import json
import socket
import threading

import pytest

from tests.fixtures import keymgr as fake_keymgr
from volumesvc import context as vs_context
from volumesvc import exception, keymgr
from volumesvc.conf import get_conf

VOL = "2b7f4f0e-5a43-4c35-9d7d-cbd1f8a3c0aa"


def ctx(project="p1", token="tok"):
    return vs_context.RequestContext(user_id="u1", project_id=project, auth_token=token)


@pytest.fixture
def conf():
    return get_conf(args=[], default_config_files=[])


@pytest.fixture
def store():
    return fake_keymgr.FakeKeyManager()


@pytest.fixture
def keys(conf, store):
    return keymgr.KeyManager(conf, backend=store)


def test_the_owner_reads_the_key(keys, store):
    key_id = store.create_key(ctx(), key=b"\x01\x02\xfe")
    key = keys.get_key(ctx(), key_id, VOL)
    assert key.get_encoded() == b"\x01\x02\xfe"
    assert keymgr.passphrase(key) == "0102fe"
    assert store.reads == [("p1", key_id)]  # with the requesting user's project


def test_another_project_is_refused_403_naming_the_key_manager(keys, store):
    key_id = store.create_key(ctx("p1"))
    with pytest.raises(exception.EncryptionKeyNotReadable) as caught:
        keys.get_key(ctx("p2"), key_id, VOL)
    assert caught.value.code == 403
    assert "key manager (barbican)" in str(caught.value)
    assert key_id in str(caught.value) and VOL in str(caught.value)


def test_a_missing_key_is_400(keys):
    with pytest.raises(exception.EncryptionKeyNotFound) as caught:
        keys.get_key(ctx(), "no-such-key", VOL)
    assert caught.value.code == 400 and "no key no-such-key" in str(caught.value)


def test_no_context_is_refused(keys, store):
    key_id = store.create_key(ctx())
    with pytest.raises(exception.EncryptionKeyNotReadable):
        keys.get_key(None, key_id, VOL)


def test_key_manager_down_is_503(keys, store):
    key_id = store.create_key(ctx())
    store.down = True
    with pytest.raises(exception.KeyManagerUnavailable) as caught:
        keys.get_key(ctx(), key_id, VOL)
    assert caught.value.code == 503 and "503" in str(caught.value)


def test_an_unexpected_failure_is_the_key_managers(conf):
    class Broken:
        def get(self, context, key_id):
            raise ConnectionResetError("reset by peer")

    with pytest.raises(exception.KeyManagerUnavailable, match="ConnectionResetError"):
        keymgr.KeyManager(conf, backend=Broken()).get_key(ctx(), "k", VOL)


def test_an_empty_key_is_refused(conf, store):
    key_id = store.create_key(ctx(), key=b"")
    with pytest.raises(exception.KeyManagerUnavailable, match="empty key"):
        keymgr.KeyManager(conf, backend=store).get_key(ctx(), key_id, VOL)


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_castellan_barbican_unreachable_is_503(conf):
    """castellan's own backend, from the options castellan registered."""
    conf.set_override("barbican_endpoint", f"http://127.0.0.1:{_closed_port()}",
                      group="barbican")
    conf.set_override("auth_endpoint", f"http://127.0.0.1:{_closed_port()}/v3",
                      group="barbican")
    conf.set_override("number_of_retries", 0, group="barbican")
    keys = keymgr.KeyManager(conf)
    with pytest.raises(exception.KeyManagerUnavailable) as caught:
        keys.get_key(ctx(), "8e1b2c3d-0000-4000-8000-000000000001", VOL)
    assert "key manager (barbican)" in str(caught.value)


def test_castellan_barbican_without_a_user_token_is_403(conf):
    keys = keymgr.KeyManager(conf)
    with pytest.raises(exception.EncryptionKeyNotReadable):
        keys.get_key(ctx(token=None), "8e1b2c3d-0000-4000-8000-000000000001", VOL)


def test_key_manager_options_are_castellans(conf):
    assert conf.key_manager.backend == "barbican"
    assert conf.barbican.send_service_user_token is False
    assert "barbican_service_user" in conf


class _Barbican(http.server.BaseHTTPRequestHandler):
    """Just enough of Barbican's v1 secrets API for castellan's ``get``, recording tokens."""

    tokens: list = []
    key = b"\x10" * 32

    def do_GET(self):
        base = f"http://{self.headers['Host']}"
        if not self.path.startswith("/v1/secrets/"):  # version discovery, unauthenticated
            self._answer(json.dumps({"versions": {"values": [{
                "id": "v1", "status": "stable",
                "links": [{"rel": "self", "href": f"{base}/v1/"}]}]}}).encode(),
                "application/json", 300)
            return
        self.tokens.append(self.headers.get("X-Auth-Token"))
        secret_id = self.path.split("/")[3]
        if self.path.endswith("/payload"):
            body, kind = self.key, "application/octet-stream"
        else:
            body = json.dumps({
                "secret_ref": f"{base}/v1/secrets/{secret_id}",
                "status": "ACTIVE", "secret_type": "symmetric", "algorithm": "aes",
                "bit_length": 256, "mode": "cbc", "name": None,
                "content_types": {"default": "application/octet-stream"},
                "created": "2026-01-01T00:00:00", "expiration": None}).encode()
            kind = "application/json"
        self._answer(body, kind)

    def _answer(self, body, kind, status=200):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def barbican():
    _Barbican.tokens = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Barbican)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_castellan_barbican_with_noauth2_sends_the_users_noauth_token(conf, barbican):
    """noauth2 contexts carry no token: castellan once refused them outright (403)."""
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("barbican_endpoint", barbican, group="barbican")
    conf.set_override("barbican_api_version", "v1", group="barbican")
    key = keymgr.KeyManager(conf).get_key(ctx(token=None), VOL, VOL)
    assert key.get_encoded() == _Barbican.key
    assert _Barbican.tokens and set(_Barbican.tokens) == {"u1:p1"}


def test_castellan_barbican_with_keystone_sends_the_users_token_to_the_catalogs_endpoint(
        conf, barbican):
    """No re-authentication against Keystone: the token as it is, to the catalog's endpoint."""
    conf.set_override("barbican_api_version", "v1", group="barbican")
    context = ctx(token="user-token")
    context.service_catalog = [{"type": "key-manager", "endpoints": [
        {"interface": "public", "url": barbican}]}]
    key = keymgr.KeyManager(conf).get_key(context, VOL, VOL)
    assert key.get_encoded() == _Barbican.key
    assert _Barbican.tokens and set(_Barbican.tokens) == {"user-token"}
