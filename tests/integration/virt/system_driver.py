"""A LibvirtDriver on the session's ``qemu:///system`` libvirtd, for a module's tests.

Secrets, virtlogd and the other parts of a real compute host exist only
under libvirtd; the embedded driver (``qemu_host``) has none of them.
"""

import shutil
import tempfile


def system_driver(system_libvirt, name):
    """Yield a started driver whose state lives in its own directory; clean up after."""
    from volumesvc import virt
    from volumesvc.conf import get_conf

    state = tempfile.mkdtemp(prefix=f"vs-{name}-", dir="/var/tmp")
    conf = get_conf(args=[], default_config_files=[])
    for option, value, group in (("state_path", state, None), ("host", f"it-{name}", None),
                                 ("compute_driver", "libvirt", None),
                                 ("connection_uri", system_libvirt.uri, "libvirt")):
        conf.set_override(option, value, group=group)
    drv = virt.load_driver(conf)
    drv.init_host(conf.host)
    yield drv
    drv.cleanup_host()
    shutil.rmtree(state, ignore_errors=True)
