"""Configuration: discovery, no global state, sample file in step with code."""

import pathlib
import subprocess
import sys

from oslo_config import cfg

from volumesvc import conf as vs_conf
from volumesvc.conf import opts

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_every_option_has_help_text():
    for group, options in opts.list_opts():
        for opt in options:
            if getattr(opt, "deprecated_for_removal", False):
                continue
            assert opt.help and opt.help.strip(), f"[{group}] {opt.name} has no help"


def test_two_confs_are_independent():
    a = vs_conf.get_conf()
    b = vs_conf.get_conf()
    a.set_override("report_interval", 3)
    assert b.report_interval == 10
    assert a is not cfg.CONF


def _generated(tmp_path, tool, generator_conf):
    out = tmp_path / "sample"
    subprocess.run(
        [str(pathlib.Path(sys.executable).parent / tool),
         "--config-file", str(REPO / "etc/volumesvc" / generator_conf),
         "--output-file", str(out)],
        check=True, cwd=REPO, capture_output=True)
    return out.read_text()


def test_sample_config_is_generated_from_the_code(tmp_path):
    """etc/volumesvc/volumesvc.conf.sample must be regenerated when options change."""
    committed = (REPO / "etc/volumesvc/volumesvc.conf.sample").read_text()
    generated = _generated(tmp_path, "oslo-config-generator",
                           "volumesvc-config-generator.conf")
    assert generated == committed, "run: tox -e genconfig"


def test_sample_policy_is_generated_from_the_code(tmp_path):
    """etc/volumesvc/policy.yaml.sample must be regenerated when policies change."""
    committed = (REPO / "etc/volumesvc/policy.yaml.sample").read_text()
    generated = _generated(tmp_path, "oslopolicy-sample-generator",
                           "volumesvc-policy-generator.conf")
    assert generated == committed, "run: tox -e genpolicy"


def test_overrides_never_leak_between_confs():
    """Regression: a shared OptGroup made set_override visible in other confs."""
    a = vs_conf.get_conf()
    b = vs_conf.get_conf()
    for group, options in opts.list_opts():
        for opt in options:
            if (getattr(opt.type, "type_name", "") == "string value"
                    and not getattr(opt.type, "choices", None)):
                grp = None if group == "DEFAULT" else group
                a.set_override(opt.dest, "leak-check", group=grp)
                target = b if grp is None else getattr(b, grp)
                assert getattr(target, opt.dest) != "leak-check", f"[{group}] {opt.dest}"
                break
