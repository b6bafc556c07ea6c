"""Schemas of /os-keypairs, one constant per version range that changed.

2.2 adds ``type`` (ssh, x509); 2.10 lets an admin name another user
(``user_id`` in the body and the query); 2.35 pages the list (``limit``,
``marker``); 2.92 requires ``public_key`` (no more generated keys) and
allows ``@`` and ``.`` in names.
"""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.logic.keypairs import KEY_TYPES
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import multi_params, object_

# Nova's name rules: letters, digits, space, '-' and '_' (2.92: also '@' and '.').
_NAME = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": r"^[a-zA-Z0-9 _-]+$"}
_NAME_2_92 = dict(_NAME, pattern=r"^[a-zA-Z0-9 @._-]+$")
_PUBLIC_KEY = {"type": "string", "minLength": 1}


def _create(properties, required=("name",)):
    return object_({"keypair": object_(properties, required=list(required))},
                   required=["keypair"])


create_v2_1 = _create({"name": _NAME, "public_key": _PUBLIC_KEY})
create_v2_2 = _create({"name": _NAME, "public_key": _PUBLIC_KEY,
                       "type": {"type": "string", "enum": list(KEY_TYPES)}})
create_v2_10 = copy.deepcopy(create_v2_2)
create_v2_10["properties"]["keypair"]["properties"]["user_id"] = {"type": "string"}
create_v2_92 = copy.deepcopy(create_v2_10)
create_v2_92["properties"]["keypair"]["properties"]["name"] = _NAME_2_92
create_v2_92["properties"]["keypair"]["required"] = ["name", "public_key"]
CREATE_WINDOWS = ((mv.V2_1_BASE, create_v2_1), (mv.V2_2_KEYPAIR_TYPE, create_v2_2),
                  (mv.V2_10_KEYPAIR_USER, create_v2_10),
                  (mv.V2_92_KEYPAIR_IMPORT_ONLY, create_v2_92))

# --- queries -------------------------------------------------------------------------
_USER = {"user_id": multi_params({"type": "string"})}
index_query_v2_1 = object_({})
index_query_v2_10 = object_(dict(_USER))
index_query_v2_35 = object_(dict(_USER, limit=multi_params(
    parameter_types.QUERY_NON_NEGATIVE_INT), marker=multi_params({"type": "string"})))
INDEX_QUERY_WINDOWS = ((mv.V2_1_BASE, index_query_v2_1),
                       (mv.V2_10_KEYPAIR_USER, index_query_v2_10),
                       (mv.V2_35_KEYPAIR_PAGING, index_query_v2_35))
show_query_v2_1 = object_({})
show_query_v2_10 = object_(dict(_USER))
SHOW_QUERY_WINDOWS = ((mv.V2_1_BASE, show_query_v2_1), (mv.V2_10_KEYPAIR_USER, show_query_v2_10))


# --- representations: rows in views/keypairs.py, envelopes here -------------------------
def one(keypair, version=None):
    return object_({"keypair": keypair}, required=["keypair"])


def many(keypair, version=None):
    item = object_({"keypair": keypair}, required=["keypair"])
    # keypairs_links: only from 2.35 (the handler pages only from there).
    return object_({"keypairs": {"type": "array", "items": item},
                    "keypairs_links": parameter_types.LINKS}, required=["keypairs"])
