"""What the benchmarks take from the all-in-one, in one module.

The storm stack starts RabbitMQ vhosts, MariaDB databases, a real Cinder and
Glance and volumesvc's services with the all-in-one's harness, and the other
scripts use its port and polling helpers. Importing them only through here
keeps the benchmarks to one line to change when the all-in-one moves.
"""

from volumesvc_aio import (
    ProcessGroup,
    config,
    free_port,
    guest_image,
    priority,
    rabbit,
    system,
    wait_for,
)
from volumesvc_aio.cinder import CinderHarness
from volumesvc_aio.glance import GlanceHarness

__all__ = ["CinderHarness", "GlanceHarness", "ProcessGroup", "config", "free_port",
           "guest_image", "priority", "rabbit", "system", "wait_for"]
