"""The ``rebuild`` server action, for volume-backed servers (Nova's contract).

volumesvc rebuilds only servers that boot from a volume: an image-backed
root disk is refused with a 400 naming the action. The image decides what
happens to the root volume:

* the image the root volume was created from (its ``volume_image_metadata``
  ``image_id``), at any microversion: the domain is recreated from the same
  volume, which keeps its data;
* another image: below 2.93 a 400, as Nova; from 2.93 the compute has
  Cinder rewrite the root volume with it (``os-reimage``) before the new
  domain starts (``compute/rebuild.py``).

As in Nova, a volume-backed server keeps an empty ``image`` in its
representation after a rebuild: the image it now runs is in its root
volume's image metadata, which Cinder updates.

Checks, in Nova's order: 404, policy (owner or admin), lock and state 409,
key pair 400, image 400, volume-backed rules 400, metadata quota 403,
volume statuses 400. Then the task_state goes
to ``rebuilding`` with a compare-and-swap together with the new name,
metadata and other attributes, the ``rebuild`` action is recorded and the
conductor is cast to. The answer is 202 with the server.
"""

import secrets

import flask
from oslo_log import log as logging
from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import errors
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_metadata, servers
from volumesvc.api.logic import snapshot, states
from volumesvc.api.policies import server_actions as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.views import servers as views
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import keypair as keypair_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

_PASSWORD_CHARS = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_PASSWORD_LENGTH = 12

NOT_VOLUME_BACKED = ("rebuild of a server that does not boot from a volume is not "
                     "supported by this service.")
NEW_IMAGE_BELOW_2_93 = "Unable to rebuild with a different image for a volume-backed server."
NO_CERT_VALIDATION = ("Image certificate validation is not supported for volume-backed "
                      "servers.")


def _bad(message):
    return errors.APIError(400, message, errors.BAD_REQUEST)


def _image(req, image_id):
    """The Glance image, active; Nova's 400s otherwise."""
    try:
        image = req.deps.glance.get(req.context, image_id)
    except exception.ImageNotFound as exc:
        raise _bad("Cannot find image for rebuild") from exc
    if image.get("status") != "active":
        raise _bad(f"Image {image_id} is not active.")
    return image


def _root(bdms):
    for bdm in bdms:
        if bdm.is_volume and bdm.boot_index == 0 and bdm.volume_id:
            return bdm
    return None


def _check_volumes(req, bdms, root):
    """Every volume attached (Nova's ``in-use`` check); returns the root volume.

    The root volume may also be ``reserved``: a rebuild that failed after it
    let go of the root's connection leaves it so, and rebuilding again is how
    that server is repaired.
    """
    root_volume = None
    for bdm in bdms:
        if not bdm.volume_id:
            continue
        volume = req.deps.cinder.get(req.context, bdm.volume_id)
        allowed = ("in-use", "reserved") if bdm is root else ("in-use",)
        if volume.get("status") not in allowed:
            raise _bad(f"Invalid volume: volume {bdm.volume_id} status must be 'in-use', "
                       f"but it is '{volume.get('status')}'")
        if bdm is root:
            root_volume = volume
    return root_volume


def _check_image_fits(image, image_id, volume):
    """Cinder's own rule for os-reimage: the image must fit the root volume."""
    size_gb = int(volume.get("size") or 0)
    if int(image.get("min_disk") or 0) > size_gb:
        raise _bad(f"Image {image_id} is unacceptable: its min_disk is larger than the "
                   f"{size_gb} GiB root volume.")
    if int(image.get("size") or 0) > size_gb << 30:
        raise _bad(f"Image {image_id} is unacceptable: it is larger than the {size_gb} GiB "
                   "root volume.")


def _values(req, instance, body) -> dict:
    """What the rebuild changes on the instance record, besides the task_state."""
    values = servers.update_values(req, instance, body)
    if "metadata" in body:
        server_metadata.check_count(body["metadata"])
        values["metadata"] = body["metadata"]
    if req.is_at_least(mv.V2_54_REBUILD_KEY_NAME) and "key_name" in body:
        key_name = body["key_name"]
        key_data = None
        if key_name is not None:
            try:
                key_data = keypair_obj.get_by_name(req.deps.db, req.context,
                                                   req.context.user_id, key_name).public_key
            except exception.KeypairNotFound as exc:
                raise _bad("Invalid key_name provided.") from exc
        values["key_name"] = key_name
        values["key_data"] = key_data
    if req.is_at_least(mv.V2_57_REBUILD_USER_DATA) and "user_data" in body:
        values["user_data"] = body["user_data"]
    return values


def rebuild(req, server_id, body):
    """rebuild → 202 with the server. 404; 409 lock/state/compute; 400 image or body."""
    ctx, deps = req.context, req.deps
    instance = get_instance(req, server_id)
    target = {"project_id": instance.project_id, "user_id": instance.user_id}
    authorize(ctx, policies.REBUILD, target)
    certs = req.is_at_least(mv.V2_63_TRUSTED_CERTS) and "trusted_image_certificates" in body
    if certs:
        authorize(ctx, policies.REBUILD_TRUSTED_CERTS, target)
    states.check_gate(ctx, instance, states.REBUILD)
    values = _values(req, instance, body)
    image_id = body["imageRef"]
    image = _image(req, image_id)
    bdms = bdm_obj.list_by_instance(deps.db, ctx, instance.uuid)
    root = _root(bdms)
    if root is None or not snapshot.is_volume_backed(instance, bdms):
        raise _bad(NOT_VOLUME_BACKED)
    if certs and body["trusted_image_certificates"]:
        raise _bad(NO_CERT_VALIDATION)
    root_volume = _check_volumes(req, bdms, root)
    current_image = (root_volume.get("volume_image_metadata") or {}).get("image_id")
    reimage = current_image != image_id
    if reimage:
        if not req.is_at_least(mv.V2_93_VOLUME_REBUILD):
            raise _bad(f"Image {image_id} is unacceptable: {NEW_IMAGE_BELOW_2_93}")
        _check_image_fits(image, image_id, root_volume)
    try:
        instance = instance_obj.save(deps.db, ctx, instance.uuid,
                                     dict(values, task_state=task_states.REBUILDING),
                                     expected_task_state=[None])
    except exception.UnexpectedTaskStateError as exc:
        current = instance_obj.get_by_uuid(deps.db, ctx, instance.uuid)
        raise states.invalid_state(current, states.REBUILD.action, "task_state") from exc
    action_obj.action_start(deps.db, ctx, instance.uuid, "rebuild", ctx.request_id,
                            ctx.user_id, ctx.project_id)
    LOG.info("Rebuilding volume-backed server %s with image %s (reimage: %s)",
             instance.uuid, image_id, reimage)
    deps.conductor.rebuild_instance(ctx, instance_uuid=instance.uuid, image_ref=image_id,
                                    reimage=reimage,
                                    preserve_ephemeral=strutils.bool_from_string(
                                        body.get("preserve_ephemeral", False)))
    password = None
    if req.conf.api.enable_instance_password:
        password = body.get("adminPass") or "".join(
            secrets.choice(_PASSWORD_CHARS) for _ in range(_PASSWORD_LENGTH))
    shown = servers.details(req, [instance], show=True)[0]
    location = shown["links"][0]["href"]

    @flask.after_this_request
    def _location(response):
        # As Nova: the answer names the server it rebuilt.
        response.headers["Location"] = location
        return response

    return {"server": views.rebuild_body(req, shown, user_data=instance.user_data,
                                         admin_password=password)}, 202


ACTIONS = {"rebuild": rebuild}
