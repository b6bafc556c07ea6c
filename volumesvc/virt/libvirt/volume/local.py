"""``local``: a file (or block device) already on this host, named by Cinder.

The all-in-one's test-only Cinder driver exports its volumes this way: the
hypervisor opens the path itself, there is nothing to connect.
"""

import os
import stat

from volumesvc.virt.libvirt.volume import base


class LibvirtLocalVolumeDriver(base.LibvirtBaseVolumeDriver):
    def source(self, connection_info):
        path = base.connected_path(connection_info)
        try:
            is_block = stat.S_ISBLK(os.stat(path).st_mode)
        except OSError:
            is_block = False
        return {"source_type": "block" if is_block else "file", "source_path": path}
