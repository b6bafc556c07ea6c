"""Nova's versioned notifications, sent by volumesvc-compute.

Consumers written for Nova (billing, audit, Ceilometer-style tools) filter
on ``event_type`` and read ``payload`` as a serialized versioned object
(``nova_object.name``/``namespace``/``version``/``data``). volumesvc has no
oslo.versionedobjects: :mod:`.base` writes that serialized form from plain
dicts and :mod:`.instance` fills the payloads Nova sends for the instance
events, field for field, so the same consumer reads either service.
"""
