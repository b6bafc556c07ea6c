"""A compute process dying in the middle of a step, for the functional stack.

The stack's services run in the test's process, so a SIGKILL is played
this way: the call the compute is in raises :class:`Killed`, a
``BaseException`` no handler of the step catches (nothing of the step runs
any more, as in a dead process), and the compute service is then stopped;
the test starts a new one on the same driver, whose domains outlive the
"process" as a libvirt daemon's would.
"""


class Killed(BaseException):
    """The compute process dying: no handler of the step runs any more."""


def dies_in(monkeypatch, target, name):
    """Make ``target.name`` die when called; the list of the calls that entered it."""
    entered = []

    def die(*args, **kwargs):
        entered.append(args)
        raise Killed()
    monkeypatch.setattr(target, name, die)
    return entered


def stop_compute(stack, monkeypatch, host):
    """Undo the test's patches and stop the compute on ``host`` (it "died")."""
    monkeypatch.undo()
    stack.computes.pop(host).stop()
