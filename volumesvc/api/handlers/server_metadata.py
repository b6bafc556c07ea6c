"""/servers/{id}/metadata[/{key}]: a server's key/value metadata (Nova's API).

GET lists or shows; POST merges items in; PUT on the collection replaces
them all; PUT on a key sets one; DELETE on a key removes one. Changes are
refused (409) while the server is locked (unless by an admin), in a task,
never launched, or not active, paused, suspended or stopped, as Nova does.
A server holds at most :data:`MAX_METADATA_ITEMS` items (Nova's default
``metadata_items`` quota): more is a 403, checked at boot too.
"""

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api.logic import states
from volumesvc.api.policies import server_metadata as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_metadata as schema
from volumesvc.objects import instance as instance_obj

# Nova's default of the metadata_items quota (items per server).
MAX_METADATA_ITEMS = 128


def check_count(metadata):
    """403 when ``metadata`` has more items than a server may hold (boot, update)."""
    if len(metadata) > MAX_METADATA_ITEMS:
        raise exception.MetadataLimitExceeded(allowed=MAX_METADATA_ITEMS)


def _instance(req, server_id, rule):
    instance = get_instance(req, server_id)
    authorize(req.context, rule, {"project_id": instance.project_id})
    return instance


def _update(req, instance, gate, change):
    """Apply ``change`` under the row lock, after the state and lock gates."""
    return instance_obj.update_metadata(
        req.deps.db, req.context, instance.uuid, change, limit=MAX_METADATA_ITEMS,
        check=lambda current: states.check_gate(req.context, current, gate))


@validation.query_schema(schema.no_query)
@validation.response_body_schema(schema.metadata_response)
def list_metadata(req, server_id):
    """GET /servers/{id}/metadata → 200 ``{"metadata": {...}}``."""
    instance = _instance(req, server_id, policies.INDEX)
    return {"metadata": dict(instance.metadata)}, 200


@validation.schema(schema.create)
@validation.response_body_schema(schema.metadata_response)
def create_metadata(req, server_id):
    """POST /servers/{id}/metadata → 200 with the whole merged metadata."""
    instance = _instance(req, server_id, policies.CREATE)
    items = req.body["metadata"]
    new = _update(req, instance, states.UPDATE_METADATA,
                  lambda current: {**current, **items})
    return {"metadata": new}, 200


@validation.schema(schema.update_all)
@validation.response_body_schema(schema.metadata_response)
def update_all_metadata(req, server_id):
    """PUT /servers/{id}/metadata → 200: the body replaces every item."""
    instance = _instance(req, server_id, policies.UPDATE_ALL)
    items = req.body["metadata"]
    new = _update(req, instance, states.UPDATE_METADATA, lambda current: dict(items))
    return {"metadata": new}, 200


@validation.query_schema(schema.no_query)
@validation.response_body_schema(schema.meta_response)
def show_metadata_item(req, server_id, key):
    """GET /servers/{id}/metadata/{key} → 200 ``{"meta": {key: value}}``; 404 unknown key."""
    instance = _instance(req, server_id, policies.SHOW)
    if key not in instance.metadata:
        raise exception.MetadataItemNotFound()
    return {"meta": {key: instance.metadata[key]}}, 200


@validation.schema(schema.update)
@validation.response_body_schema(schema.meta_response)
def update_metadata_item(req, server_id, key):
    """PUT /servers/{id}/metadata/{key} → 200; the body's one key must be the URL's."""
    instance = _instance(req, server_id, policies.UPDATE)
    meta = req.body["meta"]
    if key not in meta:
        raise errors.APIError(400, "Request body and URI mismatch", errors.BAD_REQUEST)
    value = meta[key]
    _update(req, instance, states.UPDATE_METADATA, lambda current: {**current, key: value})
    return {"meta": {key: value}}, 200


@validation.response_body_schema(schema.delete_response)
def delete_metadata_item(req, server_id, key):
    """DELETE /servers/{id}/metadata/{key} → 204; 404 unknown key."""
    instance = _instance(req, server_id, policies.DELETE)
    if key not in instance.metadata:
        # Nova's order: an unknown key is a 404 before the state and lock gates.
        raise exception.MetadataItemNotFound()

    def change(current):
        if key not in current:
            raise exception.MetadataItemNotFound()
        return {k: v for k, v in current.items() if k != key}

    _update(req, instance, states.DELETE_METADATA, change)
    return None, 204
