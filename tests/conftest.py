"""Settings for every test tier."""

from volumesvc.cmd import common

# Same as every volumesvc process: oslo.service on native threads, never eventlet.
common.use_native_threads()
