"""Schemas of /servers/{id}/migrations[/{migration_id}[/action]] (2.22 to 2.24 on).

The GETs take no query (unknown keys ignored until 2.102, as every GET);
the action body is exactly ``{"force_complete": null}``; abort takes no
body and answers none.
"""

from volumesvc.api.validation import object_

no_query = object_({})
force_complete = object_({"force_complete": {"type": "null"}}, required=["force_complete"])
no_body_response = None


def list_server_migrations_response(migration, version=None):
    return object_({"migrations": {"type": "array", "items": migration}},
                   required=["migrations"])


def show_server_migration_response(migration, version=None):
    return object_({"migration": migration}, required=["migration"])
