"""Schemas of /servers/{id}/ips, one constant per version range."""

from volumesvc.api.validation import object_

# --- GET queries: nothing ------------------------------------------------------------
list_ips_query_v2_1 = object_({})
show_ips_query_v2_1 = object_({})

# A server is on no network (volumesvc does no networking): no labels at all.
list_ips_response_v2_1 = object_({"addresses": object_({})}, required=["addresses"])
# Never sent (every label is a 404); declared so the contract test sees one.
show_ips_response_v2_1 = object_({})
