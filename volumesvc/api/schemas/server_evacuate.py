"""Request and response bodies of ``evacuate``, per microversion (Nova's).

2.1: ``host`` (absent: the scheduler chooses), ``adminPass`` and the
required ``onSharedStorage``. 2.14 drops ``onSharedStorage``; 2.29 adds
``force`` (take the named host without checking its room); 2.68 removes it
again. 2.95 takes the 2.68 body (the server then ends ``STOPPED``). The
answer is ``{"adminPass": ...}`` below 2.14 and no body from 2.14.
"""

from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_

_PASSWORD = {"type": "string"}

evacuate_v2_1 = object_({
    "host": parameter_types.HOST_NAME,
    "onSharedStorage": parameter_types.BOOL_LIKE,
    "adminPass": _PASSWORD,
}, required=["onSharedStorage"])
evacuate_v2_14 = object_({"host": parameter_types.HOST_NAME, "adminPass": _PASSWORD})
evacuate_v2_29 = object_({"host": parameter_types.HOST_NAME, "adminPass": _PASSWORD,
                          "force": parameter_types.BOOL_LIKE})
evacuate_v2_68 = evacuate_v2_14

#: The answer below 2.14 (``adminPass`` null when [api] enable_instance_password is off).
response_v2_1 = object_({"adminPass": {"type": ["null", "string"]}})
