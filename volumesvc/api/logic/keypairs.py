"""Key material of os-keypairs: generated key pairs and fingerprints of imported keys.

The ``cryptography`` library does the work. A generated pair's private key
is returned once, in the create response, and never stored. Fingerprints
follow Nova: the MD5 of an SSH key's wire blob, the SHA-1 of an X.509
certificate's DER, both as colon-separated hex, so a client that compares
them with ``ssh-keygen -l -E md5`` output or Nova's finds them equal.
"""

import base64
import datetime
import hashlib

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from volumesvc import exception
from volumesvc.api import errors
from volumesvc.objects import keypair as keypair_obj

SSH, X509 = "ssh", "x509"
KEY_TYPES = (SSH, X509)
_KEY_BITS = 2048
_CERT_DAYS = 365 * 10


def _colon_hex(digest: bytes) -> str:
    return ":".join(f"{byte:02x}" for byte in digest)


def ssh_fingerprint(public_key: str) -> str:
    try:
        key = serialization.load_ssh_public_key(public_key.strip().encode())
    except (ValueError, TypeError, UnicodeError, UnsupportedAlgorithm) as exc:
        raise exception.InvalidKeypair(reason="failed to generate fingerprint") from exc
    blob = key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).split()[1]
    return _colon_hex(hashlib.md5(base64.b64decode(blob), usedforsecurity=False).digest())


def x509_fingerprint(certificate: str) -> str:
    try:
        cert = x509.load_pem_x509_certificate(certificate.encode())
    except (ValueError, TypeError, UnicodeError) as exc:
        raise exception.InvalidKeypair(reason="failed to generate X509 fingerprint") from exc
    return _colon_hex(cert.fingerprint(hashes.SHA1()))  # noqa: S303 - Nova's format


def fingerprint(key_type: str, public_key: str) -> str:
    return x509_fingerprint(public_key) if key_type == X509 else ssh_fingerprint(public_key)


def _private_pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def generate(key_type: str, user_id: str) -> tuple[str, str]:
    """(private key PEM, public key) of a new RSA pair; X.509: a self-signed certificate."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_BITS)
    if key_type == X509:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user_id or "volumesvc")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=_CERT_DAYS))
                .sign(key, hashes.SHA256()))
        public = cert.public_bytes(serialization.Encoding.PEM).decode()
    else:
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
        public += " Generated-by-volumesvc"
    return _private_pem(key), public


def check_key_name(db, context, key_name) -> str | None:
    """The public key of ``key_name`` at boot; 400 when the caller has no such pair (as Nova).

    The key is kept with the server (``key_data``) for its config drive.
    """
    if key_name is None:
        return None
    try:
        return keypair_obj.get_by_name(db, context, context.user_id, key_name).public_key
    except exception.KeypairNotFound as exc:
        raise errors.APIError(400, exc.format_message(), errors.BAD_REQUEST) from exc
