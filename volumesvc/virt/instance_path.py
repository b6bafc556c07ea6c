"""Where a compute keeps the files of an instance on its host.

One directory per instance under ``[DEFAULT] instances_path`` (by default
``instances`` in ``state_path``): the raw root disk
of an image-backed server, the guest's console log and its config drive.
The compute's build and delete paths and the virt driver both need these
names, so they live here, below both.
"""

import os
import shutil

CONSOLE_LOG = "console.log"


def instance_dir(conf, instance_uuid):
    return os.path.join(conf.instances_path or os.path.join(conf.state_path, "instances"),
                        instance_uuid)


def remove_instance_dir(conf, instance_uuid):
    shutil.rmtree(instance_dir(conf, instance_uuid), ignore_errors=True)


def console_log(conf, instance_uuid):
    """The guest's serial console log (Nova's name for it, in the same place)."""
    return os.path.join(instance_dir(conf, instance_uuid), CONSOLE_LOG)
