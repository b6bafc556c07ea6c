"""``volumesvc-manage systemd units``: the shipped systemd units for this installation.

``units --output-dir DIR [--bindir BIN]``
    Write ``volumesvc-api.service``, ``volumesvc-conductor.service`` and
    ``volumesvc-compute.service`` into DIR (``/etc/systemd/system``), each
    ``ExecStart`` naming the executable in BIN: by default the scripts
    directory of the Python that runs this command, so the units of a
    virtualenv start that virtualenv's programs.
    Exit codes: 0 written, 1 the shipped units were not found, 2 BIN lacks a
    program a unit starts (nothing is written then).

Why a command: the units in ``etc/systemd`` start ``/usr/bin/...``, where a
distribution package puts the programs, while pip installs them under its
prefix (``/opt/volumesvc/bin``, ``/usr/local/bin``); a unit copied as it is
would start nothing, or another installation's programs. Only the directory
of a program volumesvc installs changes (``gunicorn``, ``volumesvc-*``);
system programs (``/bin/kill``) and every other line stay as shipped.
"""

import pathlib
import sys
import sysconfig

UNITS = ("volumesvc-api.service", "volumesvc-conductor.service", "volumesvc-compute.service")
WRITTEN, NO_UNITS, MISSING_PROGRAM = 0, 1, 2
# The directory the shipped units name the installed programs by.
SHIPPED_BINDIR = "/usr/bin/"
_EXEC_KEYS = ("ExecStart=", "ExecStartPre=", "ExecStartPost=", "ExecReload=", "ExecStop=")


def shipped_units_dir():
    """Where the units were installed with the package, else the checkout's ``etc/systemd``.

    A wheel puts them under ``<prefix>/share/volumesvc/systemd``
    (pyproject's data files); an editable install or a source tree has only
    the checkout's copy.
    """
    candidates = (pathlib.Path(sysconfig.get_path("data")) / "share" / "volumesvc" / "systemd",
                  pathlib.Path(__file__).resolve().parents[2] / "etc" / "systemd")
    for candidate in candidates:
        if all((candidate / name).is_file() for name in UNITS):
            return candidate
    return None


def render(text, bindir):
    """``text`` with each Exec line's ``/usr/bin/`` program moved into ``bindir``.

    Returns (text, programs): the rendered unit and the paths it now starts.
    """
    lines, programs = [], []
    for line in text.splitlines():
        key = next((k for k in _EXEC_KEYS if line.startswith(k)), None)
        if key is not None:
            command = line[len(key):]
            if command.startswith(SHIPPED_BINDIR):
                program = pathlib.Path(bindir) / command[len(SHIPPED_BINDIR):].split(" ", 1)[0]
                programs.append(program)
                line = f"{key}{bindir.rstrip('/')}/{command[len(SHIPPED_BINDIR):]}"
        lines.append(line)
    return "\n".join(lines) + "\n", programs


class SystemdCommands:
    """systemd units that start this installation's programs."""

    def __init__(self, conf):
        self.conf = conf

    def units(self, args):
        """Write the three units into --output-dir with their programs in --bindir."""
        source = shipped_units_dir()
        if source is None:
            print("volumesvc-manage: the shipped systemd units were not found "
                  "(share/volumesvc/systemd under the install prefix)", file=sys.stderr)
            return NO_UNITS
        bindir = args.bindir or sysconfig.get_path("scripts")
        rendered, missing = {}, []
        for name in UNITS:
            text, programs = render((source / name).read_text(), bindir)
            missing += [str(p) for p in programs if not p.is_file()]
            rendered[name] = text
        if missing:
            print("volumesvc-manage: not in --bindir, so no unit was written: "
                  + ", ".join(missing), file=sys.stderr)
            return MISSING_PROGRAM
        output = pathlib.Path(args.output_dir)
        output.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (output / name).write_text(text)
            print(output / name)
        return WRITTEN


def add_parsers(subparsers):
    systemd = subparsers.add_parser("systemd", help=SystemdCommands.__doc__)
    actions = systemd.add_subparsers(dest="action", required=True)
    units = actions.add_parser("units", help=SystemdCommands.units.__doc__)
    units.add_argument("--output-dir", required=True,
                       help="where the units go, e.g. /etc/systemd/system")
    units.add_argument("--bindir", default=None,
                       help="the directory of volumesvc's programs (default: this "
                            "Python's scripts directory)")
