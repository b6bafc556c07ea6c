"""The key manager adapter: the only module in volumesvc that imports castellan.

An encrypted volume's key lives in a key manager (Barbican by default)
under the volume's ``encryption_key_id``. The compute reads it with the
context of the user whose request attaches the volume, so a user who may
not read the key cannot make a server open the volume; castellan adds the
service token (``[barbican] send_service_user_token``) when configured.

Why an adapter: castellan's and its backends' failures (castellan
exceptions, barbicanclient's HTTP errors, keystoneauth's connection errors)
leave this module as three ``volumesvc.exception`` classes that name the
key manager and say whose fault it is: the user's (403, 400) or the key
manager's (503). Tests hand :class:`KeyManager` a backend of their own with
castellan's interface (``get(context, key_id)`` returning a managed object).
"""

import binascii

from castellan import key_manager as castellan_key_manager
from castellan.common import exception as castellan_exception
from keystoneauth1 import exceptions as ks_exception
from keystoneauth1 import token_endpoint
from oslo_log import log as logging

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.common import keystone

LOG = logging.getLogger(__name__)

# HTTP statuses from the key manager that mean "this user may not read it".
_REFUSED = (401, 403)


def _status(exc):
    """The HTTP status behind a castellan error (its backend's error is the cause)."""
    seen = exc
    while seen is not None:
        for attr in ("status_code", "http_status"):
            code = getattr(seen, attr, None)
            if isinstance(code, int) and code:
                return code
        if isinstance(seen, castellan_exception.Forbidden):
            return 403  # castellan wraps its own refusals too (no user token)
        if type(seen).__name__ == "HTTPAuthError":
            return 401
        seen = seen.__cause__ or seen.__context__
    return None


def passphrase(key):
    """The passphrase of a volume's LUKS container, made from its key object.

    The rule Cinder, Nova and os-brick's encryptors share: a key of type
    ``passphrase`` is the passphrase as it is; any other key's bytes are
    written as lowercase hex (Cinder formats a volume with that text), so
    QEMU's secret and cryptsetup must be given exactly that, not raw bytes.
    """
    encoded = key.get_encoded()
    if key.managed_type() == "passphrase":
        return encoded.decode("utf-8") if isinstance(encoded, bytes) else str(encoded)
    return binascii.hexlify(encoded).decode("ascii")


class _UserAuthContext(vs_context.RequestContext):
    """The user's context with the keystoneauth plugin castellan asks contexts for.

    castellan calls ``get_auth_plugin()`` when a context has one (Nova's
    and Cinder's contexts do) and otherwise re-authenticates the bare token
    against ``[barbican] auth_endpoint``, which a noauth2 context (no token)
    cannot do at all.
    """

    user_auth = None

    def get_auth_plugin(self):
        return self.user_auth


def user_auth(conf, context):
    """The plugin that reads keys as ``context``'s user, or None to let castellan decide.

    noauth2: a ``user:project`` token to ``[barbican] barbican_endpoint``,
    the same token our noauth2 API and Cinder's noauth take (a key manager
    deployed without Keystone reads the project from it). Keystone: the
    user's own token, Barbican's endpoint from ``[barbican]`` or else the
    request's service catalog (type ``key-manager``).
    """
    if context is None:
        return None
    if conf.api.auth_strategy == "noauth2":
        user = context.user_id or "admin"
        project = context.project_id or user
        return token_endpoint.Token(conf.barbican.barbican_endpoint, f"{user}:{project}")
    if not context.auth_token:
        return None
    return keystone.ContextTokenAuth(context.auth_token,
                                     getattr(context, "service_catalog", None))


def _castellan_context(conf, context):
    auth = user_auth(conf, context)
    if auth is None:
        return context
    values = context.to_dict()
    wrapped = _UserAuthContext.from_dict(values, overwrite=False)
    wrapped.user_auth = auth
    return wrapped


class KeyManager:
    """Reads volume keys from ``[key_manager] backend`` through castellan."""

    def __init__(self, conf, backend=None):
        self.conf = conf
        self._backend = backend

    @property
    def name(self):
        return self.conf.key_manager.backend

    @property
    def backend(self):
        if self._backend is None:
            self._backend = castellan_key_manager.API(self.conf)
        return self._backend

    def get_key(self, context, key_id, volume_id):
        """Key ``key_id`` of volume ``volume_id`` (castellan's object), read as the user."""
        names = {"backend": self.name, "key_id": key_id, "volume_id": volume_id}
        try:
            key = self.backend.get(_castellan_context(self.conf, context), key_id)
        except castellan_exception.Forbidden as exc:
            raise exception.EncryptionKeyNotReadable(reason=str(exc), **names) from exc
        except castellan_exception.ManagedObjectNotFoundError as exc:
            raise exception.EncryptionKeyNotFound(**names) from exc
        except castellan_exception.KeyManagerError as exc:
            status = _status(exc)
            if status in _REFUSED:
                raise exception.EncryptionKeyNotReadable(reason=str(exc), **names) from exc
            if status == 404:
                raise exception.EncryptionKeyNotFound(**names) from exc
            raise exception.KeyManagerUnavailable(reason=str(exc), **names) from exc
        except ks_exception.Unauthorized as exc:
            raise exception.EncryptionKeyNotReadable(reason=str(exc), **names) from exc
        except Exception as exc:  # noqa: BLE001 - any other failure is the key manager's
            LOG.warning("Key manager %s failed reading key %s of volume %s: %s",
                        self.name, key_id, volume_id, exc)
            raise exception.KeyManagerUnavailable(reason=f"{type(exc).__name__}: {exc}",
                                                  **names) from exc
        if key is None or not key.get_encoded():
            raise exception.KeyManagerUnavailable(
                reason="the key manager answered with an empty key", **names)
        return key
