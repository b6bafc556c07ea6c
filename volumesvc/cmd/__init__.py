"""Console scripts.

NOTE: libraries under oslo.service/futurist still import eventlet (never
used here: volumesvc runs on native threads) and warn about it at import
time; those warnings are silenced for our commands only, before anything
imports them, so operators do not read them on every run.
"""

import warnings

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="oslo_utils.eventletutils")
warnings.filterwarnings("ignore", category=DeprecationWarning,
                        module="oslo_service.eventlet_backdoor")
