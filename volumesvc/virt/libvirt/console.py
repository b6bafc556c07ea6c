"""A guest's console log as the compute reads it: the newest bytes, rotations included.

The serial port's log (``config.SerialConsoleConfig``) grows for as long as
QEMU runs. Under libvirtd, virtlogd rotates it (``console.log`` is the
newest, then ``console.log.0``, ``console.log.1``...), so the newest
:data:`MAX_CONSOLE_BYTES` may span several files. Only that many are ever
read, as Nova does, so a reply stays small whatever the guest printed.

virtlogd writes the log as root, readable by root only; a compute that
runs unprivileged reads it through volumesvc's privsep daemon
(:mod:`volumesvc.privsep.files`), which reads nothing but console logs.
"""

from oslo_log import log as logging

from volumesvc.privsep import files as privsep_files

LOG = logging.getLogger(__name__)

#: The most of a console log one read returns (Nova's cap).
MAX_CONSOLE_BYTES = 100 * 1024


def last_bytes(path, count):
    """``(the last count bytes of path, how many bytes precede them)``.

    Read by the compute itself when it may, else by the privsep daemon.
    """
    chunk, start = privsep_files.as_needed(
        privsep_files.read_tail, privsep_files.privileged_read_tail, path, count)
    return chunk, start


def read_log(path, max_bytes=MAX_CONSOLE_BYTES):
    """The newest ``max_bytes`` of the log at ``path`` and its rotations, oldest first.

    A missing log is empty output, not an error: QEMU creates it when the
    domain starts, and a server that has not started yet printed nothing.
    """
    data = b""
    left = max_bytes
    candidate = path
    generation = 0
    while left > 0:
        try:
            chunk, skipped = last_bytes(candidate, left)
        except FileNotFoundError:
            break
        data = chunk + data
        left -= len(chunk)
        if skipped:
            LOG.debug("Console log %s: %d older bytes left out", candidate, skipped)
        candidate = f"{path}.{generation}"
        generation += 1
    return data
