"""/servers/{id}/tags[/{tag}]: server tags (API 2.26; 404 below it).

GET lists the tags or checks one (204/404); PUT replaces them all or adds
one (201 with a Location, 204 when already there); DELETE removes one or
all. At most 50 tags of 1-60 characters without ``/`` or ``,``. Changes need
the server active, paused, suspended, stopped, shelved or shelved-offloaded
(409 otherwise), as Nova's tag API; the lock does not apply. Rows live in
the ``tags`` table (``objects/tag.py``), which the list filters query.
"""

import flask
import jsonschema

from volumesvc import exception
from volumesvc.api import errors, validation, versioned
from volumesvc.api import microversions as mv
from volumesvc.api.logic import states
from volumesvc.api.policies import server_tags as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import parameter_types
from volumesvc.api.schemas import server_tags as schema
from volumesvc.api.views import servers as server_views
from volumesvc.objects import tag as tag_obj

_FROM = mv.V2_26_TAGS


def _instance(req, server_id, rule, gate=None):
    instance = get_instance(req, server_id)
    authorize(req.context, rule, {"project_id": instance.project_id})
    if gate is not None:
        states.check_gate(req.context, instance, gate)
    return instance


def _check_tag(tag):
    """A tag from the URL gets the body's rules, with Nova's 400 message."""
    try:
        jsonschema.validate(tag, parameter_types.TAG)
    except jsonschema.ValidationError as exc:
        raise errors.APIError(
            400, f"Tag '{tag}' is invalid. It must be a non empty string without characters "
            f"'/' and ','. Validation error message: {exc.message}",
            errors.SCHEMA_INVALID) from exc


@versioned.version_handler(_FROM, name="list_tags")
@validation.query_schema(schema.no_query, _FROM)
@validation.response_body_schema(schema.tags_response, _FROM)
def list_tags(req, server_id):
    """GET /servers/{id}/tags → 200 ``{"tags": [...]}`` (sorted)."""
    instance = _instance(req, server_id, policies.INDEX)
    return {"tags": tag_obj.get_all(req.deps.db, req.context, instance.uuid)}, 200


@versioned.version_handler(_FROM, name="replace_tags")
@validation.schema(schema.update_all, _FROM)
@validation.response_body_schema(schema.tags_response, _FROM)
def replace_tags(req, server_id):
    """PUT /servers/{id}/tags → 200 with the new set; 409 in a state that refuses it."""
    instance = _instance(req, server_id, policies.UPDATE_ALL, states.UPDATE_TAGS)
    tags = tag_obj.replace(req.deps.db, req.context, instance.uuid, req.body["tags"])
    return {"tags": tags}, 200


@versioned.version_handler(_FROM, name="delete_all_tags")
@validation.response_body_schema(schema.no_body_response, _FROM)
def delete_all_tags(req, server_id):
    """DELETE /servers/{id}/tags → 204."""
    instance = _instance(req, server_id, policies.DELETE_ALL, states.DELETE_TAGS)
    tag_obj.delete_all(req.deps.db, req.context, instance.uuid)
    return None, 204


@versioned.version_handler(_FROM, name="check_tag")
@validation.query_schema(schema.no_query, _FROM)
@validation.response_body_schema(schema.no_body_response, _FROM)
def check_tag(req, server_id, tag):
    """GET /servers/{id}/tags/{tag} → 204 when the server has it, else 404."""
    instance = _instance(req, server_id, policies.SHOW)
    if not tag_obj.exists(req.deps.db, req.context, instance.uuid, tag):
        raise exception.InstanceTagNotFound(instance_id=instance.uuid, tag=tag)
    return None, 204


@versioned.version_handler(_FROM, name="add_tag")
@validation.schema(schema.update, _FROM)
@validation.response_body_schema(schema.no_body_response, _FROM)
def add_tag(req, server_id, tag):
    """PUT /servers/{id}/tags/{tag} → 201 with a Location (new) or 204 (already there).

    Nova's order: policy, the tag's form (400), the state (409), the count
    (400 at 50 tags, even for a tag already there).
    """
    instance = get_instance(req, server_id)
    authorize(req.context, policies.UPDATE, {"project_id": instance.project_id})
    _check_tag(tag)
    states.check_gate(req.context, instance, states.UPDATE_TAGS)
    if not tag_obj.add(req.deps.db, req.context, instance.uuid, tag):
        return None, 204
    location = server_views.links(req, instance.uuid)[0]["href"] + f"/tags/{tag}"

    @flask.after_this_request
    def _location(response):
        response.headers["Location"] = location
        return response

    return None, 201


@versioned.version_handler(_FROM, name="delete_tag")
@validation.response_body_schema(schema.no_body_response, _FROM)
def delete_tag(req, server_id, tag):
    """DELETE /servers/{id}/tags/{tag} → 204; 404 when the server lacks it."""
    instance = _instance(req, server_id, policies.DELETE, states.DELETE_TAGS)
    if not tag_obj.delete(req.deps.db, req.context, instance.uuid, tag):
        raise exception.InstanceTagNotFound(instance_id=instance.uuid, tag=tag)
    return None, 204
