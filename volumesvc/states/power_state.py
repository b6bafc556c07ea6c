"""Power states as Nova reports them (``OS-EXT-STS:power_state``)."""

NOSTATE = 0
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4  # the domain is off
CRASHED = 6
SUSPENDED = 7

STATE_MAP = {
    NOSTATE: "pending",
    RUNNING: "running",
    PAUSED: "paused",
    SHUTDOWN: "shutdown",
    CRASHED: "crashed",
    SUSPENDED: "suspended",
}
