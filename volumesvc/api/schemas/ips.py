"""Schemas of /servers/{id}/ips, one constant per version range."""

import copy

from volumesvc.api.validation import object_

# --- GET queries: nothing (ignored; 2.102: unknown keys give 400) ---------------------
list_ips_query_v2_1 = object_({})
list_ips_query_v2_102 = copy.deepcopy(list_ips_query_v2_1)
show_ips_query_v2_1 = object_({})
show_ips_query_v2_102 = copy.deepcopy(show_ips_query_v2_1)

# A server is on no network (volumesvc does no networking): no labels at all.
list_ips_response_v2_1 = object_({"addresses": object_({})}, required=["addresses"])
# Never sent (every label is a 404); declared so the contract test sees one.
show_ips_response_v2_1 = object_({})
