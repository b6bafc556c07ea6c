"""api/deps.py: collaborators built lazily, once, from conf."""

import threading

from volumesvc.api.deps import Deps
from volumesvc.conf import get_conf


def test_volume_types_builds_its_cinder_adapter_without_deadlocking():
    """Regression (issue 15): building the type list's holder built the Cinder
    adapter inside the same non-reentrant lock, so the first typed POST /servers
    of a real API worker hung for good (the boot storm's warm-up never got an
    answer). Tests that inject a Cinder double never took that path."""
    deps = Deps(get_conf(args=[], default_config_files=[]))
    got = []
    worker = threading.Thread(target=lambda: got.append(deps.volume_types), daemon=True)
    worker.start()
    worker.join(10)
    assert got, "Deps.volume_types did not return (lock taken twice)"
    assert deps.volume_types is got[0]
