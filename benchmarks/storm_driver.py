"""The storm's slow compute host, a driver the compute loads by name.

``compute_driver = storm_driver:SlowHostDriver`` with this directory on the
compute's ``PYTHONPATH`` (storm_stack.py does both): the ``fake`` driver
(libvirt driver, in-memory libvirt, no QEMU) that spends ``STORM_RESERVE_DELAY``
seconds (``--delay``) picking each attached volume's device name. That step
runs inside the conductor's reserve call, so each attach holds a conductor
thread that long, which is the slow host the async-attach spec is about.
The delay lives here, not in volumesvc's options: production code has no
benchmark knob.
"""

import os
import time

from volumesvc.virt.fake import FakeDriver

DELAY_ENV = "STORM_RESERVE_DELAY"


class SlowHostDriver(FakeDriver):
    delay = float(os.environ.get(DELAY_ENV) or 0)

    def get_device_name_for_instance(self, instance, used_names, bus):
        time.sleep(self.delay)
        return super().get_device_name_for_instance(instance, used_names, bus)
