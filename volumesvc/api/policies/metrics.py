"""Policy of the API's Prometheus scrape (``[metrics] path``; volumesvc's own rule)."""

from oslo_policy import policy

SHOW = "volumesvc:metrics:show"

_RULES = [
    policy.DocumentedRuleDefault(
        name=SHOW, check_str="@",
        description="Read the API's Prometheus metrics. The default lets anyone who reaches "
                    "the path read them, tokenless scrapers included; a rule such as "
                    "'role:admin' or 'role:monitoring' asks the scraper for a token "
                    "(X-Auth-Token) with that role.",
        operations=[{"method": "GET", "path": "[metrics] path (default /metrics)"}]),
]


def list_rules():
    return _RULES
