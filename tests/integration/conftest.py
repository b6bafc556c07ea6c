"""Fixtures shared by the integration tier: real RabbitMQ, databases, ports.

Integration tests run everything as separate processes against the
machine's real services. They never skip: a missing service is a failure
with a message saying what to start.
"""

import os

import pytest

from tests.fixtures.deployment import (  # noqa: F401 - fixtures; the tests import these
    Deployment,
    bin_path,
    make_deployment,
    pg_database_url,
    rabbit_vhost,
)
from tests.fixtures.tls_services import (  # noqa: F401 - fixtures
    tls_authority,
    tls_postgres,
    tls_rabbit,
    tls_state_dir,
)
from tests.integration.fixtures_openstack import (  # noqa: F401 - fixtures
    cinder_api,
    cinder_conf,
    cinder_ctx,
    cinder_harness,
    glance_harness,
)
from tests.integration.fixtures_storage import (  # noqa: F401 - fixtures
    ceph_cluster,
    system_libvirt,
)
from volumesvc_aio import free_port  # noqa: F401 - the tests import it from here


def pytest_collection_modifyitems(items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)
    # Once a process has opened the embedded QEMU driver (``qemu_host``),
    # libvirt refuses every other connection in it, ``qemu:///system``
    # included ("Missing URI parameter 'root'"): the modules that open the
    # embedded driver run last, whole and in their order, after every module
    # that talks to libvirtd from this process.
    embedded = {getattr(item, "module", None) for item in items
                if "qemu_host" in getattr(item, "fixturenames", ())}
    embedded.discard(None)
    items.sort(key=lambda item: getattr(item, "module", None) in embedded)

class QemuHost:
    """A LibvirtDriver on ``qemu:///embed`` with its own state directory."""

    def __init__(self, workdir, driver):
        self.workdir = workdir
        self.driver = driver


@pytest.fixture(scope="session")
def qemu_host():
    """One embedded QEMU driver for the whole test process.

    libvirt allows one embedded root per process ("Cannot open embedded
    driver at path X, already open with path Y"), and its first open probes
    QEMU for seconds; every in-process real-QEMU test shares this one.
    """
    import shutil
    import tempfile

    from volumesvc import exception, virt
    from volumesvc.conf import get_conf

    # NOTE: short path on purpose: QEMU's monitor sockets live under the
    # embedded root and UNIX socket paths are limited to 108 bytes.
    workdir = tempfile.mkdtemp(prefix="vsvc-qemu-", dir="/var/tmp")
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", workdir)
    conf.set_override("host", "it-qemu")
    conf.set_override("compute_driver", "libvirt")
    drv = virt.load_driver(conf)
    try:
        drv.init_host(conf.host)
    except exception.HypervisorUnavailable as exc:
        pytest.fail(f"libvirt is not usable here: {exc}")
    yield QemuHost(workdir, drv)
    for guest in drv.host.list_guests():
        drv.destroy({"uuid": guest.uuid})
    drv.cleanup_host()
    shutil.rmtree(workdir, ignore_errors=True)
