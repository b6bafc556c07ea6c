"""The names of volumesvc's service binaries, written once.

A binary name is data, not just a process title: it is half of a service
record's key (``host``, ``binary``), so the compute that heartbeats, the
conductor that picks a host and the API that reports ``os-services`` must
spell it identically. A unit test (``tests/unit/test_vocabulary.py``) refuses
a retyped literal anywhere else in ``volumesvc``.
"""

API = "volumesvc-api"
CONDUCTOR = "volumesvc-conductor"
COMPUTE = "volumesvc-compute"
