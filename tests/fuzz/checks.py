"""What every fuzzed answer must be, shared by the fuzz tier's route and filter tests.

``check``: below 500; a redirect names its target; an error is one Nova
fault whose code is the status; Bob (the other project's member) never gets
a success that names one of Alice's ids in the path or the body.
"""

from tests.fuzz import strategies as fst
from tests.fuzz import world as world_mod

# Ids in a body that say which volume or snapshot a request acts on.
VOLUME_KEYS = {"volumeId", "uuid", "volume_id", "snapshot_id"}


def volume_ids_in(document, found=None):
    found = set() if found is None else found
    if isinstance(document, dict):
        for key, value in document.items():
            if key in VOLUME_KEYS and isinstance(value, str):
                found.add(value)
            volume_ids_in(value, found)
    elif isinstance(document, list):
        for item in document:
            volume_ids_in(item, found)
    return found


def check(world, request, resp):
    """The properties every answer must have (see the module docstring)."""
    status, where = resp.status_code, f"{request['method']} {request['url']}"
    assert status < 500, (where, request, resp.data[:2000])
    if 300 < status < 400:
        # werkzeug's redirect of a path with "//" to its single-slash form.
        assert resp.headers["Location"], (where, status)
        return
    payload = fst.strict_json(resp.data) if resp.data else None
    if status >= 400 and request["method"] != "HEAD":  # HEAD answers carry no body
        assert isinstance(payload, dict) and len(payload) == 1, (where, payload)
        (fault,) = payload.values()
        assert fault["code"] == status and isinstance(fault["message"], str), (where, payload)
    if request["token"] == world_mod.BOB and status < 400:
        alice = world.alice_ids()
        path = request["url"].split("?", 1)[0]
        assert not any(i in path for i in alice), (where, status, payload)
        try:
            body = fst.strict_json(request["body"]) if request["body"] else None
        except (ValueError, RecursionError):
            # Not JSON, or nested past Python's parser (RAW_BODIES' 3000 deep):
            # a route that answered below 400 ignored the body.
            body = None
        assert not (volume_ids_in(body) & alice), (where, request["body"], status)
