"""/os-keypairs across its microversion windows, and ``key_name`` at boot."""

import base64
import hashlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.functional.stack import Stack

USER = "alice:proj"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("keypairs"), hosts=())
    yield s
    s.stop()


def _ssh_public_key():
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode()


def _create(stack, body, version="2.1", token=USER, status=None):
    return stack.api("POST", "/os-keypairs", {"keypair": body}, version=version,
                     token=token, status=status)


def test_generated_ssh_key_at_2_1_answers_200_and_is_usable(stack):
    _, body, _ = _create(stack, {"name": "gen21"}, status=200)
    keypair = body["keypair"]
    assert set(keypair) == {"name", "public_key", "fingerprint", "user_id", "private_key"}
    assert keypair["user_id"] == "alice"
    private = serialization.load_pem_private_key(keypair["private_key"].encode(), None)
    public = serialization.load_ssh_public_key(keypair["public_key"].encode())
    assert private.public_key().public_numbers() == public.public_numbers()
    assert len(keypair["fingerprint"].split(":")) == 16
    stack.api("DELETE", "/os-keypairs/gen21", token=USER, status=202)


def test_imported_ssh_key_at_2_2_answers_201_with_type_and_show_has_the_row(stack):
    public = _ssh_public_key()
    _, body, _ = _create(stack, {"name": "imp", "public_key": public}, version="2.2",
                         status=201)
    assert "private_key" not in body["keypair"] and body["keypair"]["type"] == "ssh"
    # Nova's fingerprint: the MD5 of the key's wire blob, as ``ssh-keygen -l -E md5``.
    blob = base64.b64decode(public.split()[1])
    assert body["keypair"]["fingerprint"] == ":".join(
        f"{b:02x}" for b in hashlib.md5(blob, usedforsecurity=False).digest())
    _, shown, _ = stack.api("GET", "/os-keypairs/imp", version="2.2", token=USER, status=200)
    shown = shown["keypair"]
    assert shown["public_key"] == public and shown["deleted"] is False
    assert shown["deleted_at"] is None and isinstance(shown["id"], int)
    assert shown["fingerprint"] == body["keypair"]["fingerprint"]
    status, fault, _ = _create(stack, {"name": "imp", "public_key": public}, version="2.2")
    assert status == 409 and fault["conflictingRequest"]["message"] == (
        "Key pair 'imp' already exists.")
    stack.api("DELETE", "/os-keypairs/imp", version="2.2", token=USER, status=204)
    status, fault, _ = stack.api("GET", "/os-keypairs/imp", token=USER)
    assert status == 404 and fault["itemNotFound"]["message"] == (
        "Keypair imp not found for user alice")


def test_x509_generated_and_type_refused_before_2_2(stack):
    _, body, _ = _create(stack, {"name": "cert", "type": "x509"}, version="2.2", status=201)
    cert = x509.load_pem_x509_certificate(body["keypair"]["public_key"].encode())
    assert body["keypair"]["type"] == "x509"
    assert body["keypair"]["fingerprint"] == ":".join(
        f"{b:02x}" for b in cert.fingerprint(__import__(
            "cryptography.hazmat.primitives.hashes", fromlist=["SHA1"]).SHA1()))
    status, _, _ = _create(stack, {"name": "old", "type": "x509"}, version="2.1")
    assert status == 400
    stack.api("DELETE", "/os-keypairs/cert", version="2.2", token=USER, status=204)


def test_bad_public_key_and_name_are_400(stack):
    status, fault, _ = _create(stack, {"name": "bad", "public_key": "ssh-rsa nonsense"})
    assert status == 400 and fault["badRequest"]["message"] == (
        "Keypair data is invalid: failed to generate fingerprint")
    status, _, _ = _create(stack, {"name": "a@b", "public_key": _ssh_public_key()},
                           version="2.91")
    assert status == 400
    _create(stack, {"name": "a@b.c", "public_key": _ssh_public_key()}, version="2.92",
            status=201)
    status, _, _ = _create(stack, {"name": "gen"}, version="2.92")
    assert status == 400, "2.92 imports only"
    stack.api("DELETE", "/os-keypairs/a@b.c", version="2.92", token=USER, status=204)


def test_admin_acts_for_another_user_from_2_10_only(stack):
    public = _ssh_public_key()
    _create(stack, {"name": "forbob", "public_key": public, "user_id": "bob"},
            version="2.10", token="admin:admin", status=201)
    _, body, _ = stack.api("GET", "/os-keypairs?user_id=bob", version="2.10",
                           status=200)
    assert [k["keypair"]["name"] for k in body["keypairs"]] == ["forbob"]
    status, _, _ = _create(stack, {"name": "x", "public_key": public, "user_id": "bob"},
                           version="2.9", token="admin:admin")
    assert status == 400
    # A non-admin may not name another user.
    status, fault, _ = stack.api("GET", "/os-keypairs?user_id=bob", version="2.10",
                                 token=USER)
    assert status == 403 and "forbidden" in fault
    status, _, _ = stack.api("DELETE", "/os-keypairs/forbob?user_id=bob", version="2.10",
                             token=USER)
    assert status == 403
    stack.api("DELETE", "/os-keypairs/forbob?user_id=bob", version="2.10", status=204)


def test_list_pages_from_2_35(stack):
    for name in ("p1", "p2", "p3"):
        _create(stack, {"name": name, "public_key": _ssh_public_key()},
                version="2.35", token="pager:proj", status=201)
    _, body, _ = stack.api("GET", "/os-keypairs?limit=2", version="2.35",
                           token="pager:proj", status=200)
    assert [k["keypair"]["name"] for k in body["keypairs"]] == ["p1", "p2"]
    assert set(body["keypairs"][0]["keypair"]) == {"name", "public_key", "fingerprint",
                                                   "type"}
    assert "marker=p2" in body["keypairs_links"][0]["href"]
    _, body, _ = stack.api("GET", "/os-keypairs?limit=2&marker=p2", version="2.35",
                           token="pager:proj", status=200)
    assert [k["keypair"]["name"] for k in body["keypairs"]] == ["p3"]
    assert "keypairs_links" not in body
    status, _, _ = stack.api("GET", "/os-keypairs?marker=nope", version="2.35",
                             token="pager:proj")
    assert status == 400
    # Before 2.35 the paging keys are ignored (and everything is listed).
    _, body, _ = stack.api("GET", "/os-keypairs?limit=1", version="2.34",
                           token="pager:proj", status=200)
    assert len(body["keypairs"]) == 3


def test_key_pairs_quota_is_403(stack):
    stack.conf.set_override("key_pairs", 1, group="quota")
    try:
        _create(stack, {"name": "only", "public_key": _ssh_public_key()},
                token="quota:proj", status=200)
        status, fault, _ = _create(stack, {"name": "more", "public_key": _ssh_public_key()},
                                   token="quota:proj")
        assert status == 403 and fault["forbidden"]["message"] == (
            "Quota exceeded, too many key pairs.")
    finally:
        stack.conf.clear_override("key_pairs", group="quota")


def test_boot_with_an_unknown_key_name_is_400_and_a_known_one_is_shown(stack):
    from tests.functional.stack import BLANK_ROOT

    server = {"name": "k", "flavorRef": "42", "block_device_mapping_v2": BLANK_ROOT,
              "key_name": "nokey"}
    status, fault, _ = stack.api("POST", "/servers", {"server": server}, token="kb:proj")
    assert status == 400 and fault["badRequest"]["message"] == (
        "Keypair nokey not found for user kb")
    _create(stack, {"name": "mykey", "public_key": _ssh_public_key()}, token="kb:proj",
            status=200)
    _, body, _ = stack.api("POST", "/servers", {"server": dict(server, key_name="mykey")},
                           token="kb:proj", status=202)
    _, shown, _ = stack.api("GET", f"/servers/{body['server']['id']}", token="kb:proj",
                            status=200)
    assert shown["server"]["key_name"] == "mykey"
