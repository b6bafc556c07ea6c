"""volumesvc-aio refuses to start, in one line, when its extra is not installed."""

import sys

import pytest

from volumesvc.cmd import aio


@pytest.mark.parametrize("hidden", ["pymysql", "libvirt"])
def test_a_missing_extra_module_is_one_clear_line(hidden, monkeypatch, capsys, tmp_path):
    # None in sys.modules makes ``import <hidden>`` fail as if not installed.
    monkeypatch.setitem(sys.modules, hidden, None)
    monkeypatch.setattr(aio.AllInOne, "start", lambda self: pytest.fail("must not start"))
    assert aio.main(["--state-dir", str(tmp_path / "aio"), "--no-install"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert hidden in err and "pip install 'volumesvc[aio]'" in err
    assert not (tmp_path / "aio").exists()


def test_nothing_is_missing_with_the_extra_installed():
    assert aio.missing_modules() == []
