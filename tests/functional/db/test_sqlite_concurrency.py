"""Regression: "database is locked" with several writers on one SQLite file.

oslo.db begins SQLite transactions DEFERRED; a transaction that reads and
then writes after another connection committed fails at once with
SQLITE_BUSY instead of waiting for busy_timeout. The single-machine setup
has api workers, a conductor and heartbeats writing the same file, so every
transaction must begin IMMEDIATE (volumesvc/db/api.py).
"""

import threading
import uuid

from tests.fixtures import database as fixtures
from volumesvc import context
from volumesvc.conf import get_conf
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import service as service_obj


def test_concurrent_read_then_write_transactions_wait_instead_of_failing(tmp_path):
    conf = get_conf(default_config_files=[])
    db = fixtures.sqlite_database(conf, str(tmp_path))
    instance = instance_obj.create(db, context.get_admin_context(),
                                   {"project_id": "p", "vm_state": "active"})
    errors = []

    def work(n):
        for _ in range(15):
            ctx = context.get_admin_context()
            try:
                bdm = bdm_obj.create(db, ctx, {
                    "instance_uuid": instance.uuid, "source_type": "volume",
                    "destination_type": "volume", "volume_id": str(uuid.uuid4())})
                bdm_obj.save(db, ctx, bdm.uuid, {"attachment_id": "a"})
                bdm_obj.destroy(db, ctx, bdm.uuid)
                service_obj.heartbeat(db, ctx, host=f"h{n}", binary="volumesvc-compute",
                                      topic="compute", version=1, capabilities={})
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(str(exc).splitlines()[0])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    db.dispose()
    assert errors == []
