"""Virtualenv installs of the harnesses are one at a time per virtualenv.

Two test runs on one machine (CI beside a developer's run, or an all-in-one
beside the integration tier) asked pip to fill the same virtualenv at once
and left it broken; now the second waits for the first and reuses its work.
"""

import json
import threading
import time

import volumesvc_aio


def test_concurrent_installs_of_one_venv_install_once(tmp_path, monkeypatch):
    calls = []
    running = []

    def slow_install(venv_dir, requirements, log, marker, wanted):
        running.append(1)
        calls.append(len(running))
        time.sleep(0.3)
        (tmp_path / "venv").mkdir(exist_ok=True)
        with open(marker, "w") as f:
            f.write('{"requirements": ["pkg==1"]}')
        running.pop()
        return True

    monkeypatch.setattr(volumesvc_aio, "_install_venv", slow_install)
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        volumesvc_aio.install_venv(str(tmp_path / "venv"), ["pkg==1"]))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == [False, False, True]
    assert calls == [1], "installs overlapped or ran more than once"


def test_a_changed_requirement_list_installs_again(tmp_path, monkeypatch):
    seen = []

    def record(venv_dir, requirements, log, marker, wanted):
        seen.append(list(requirements))
        (tmp_path / "venv").mkdir(exist_ok=True)
        with open(marker, "w") as f:
            json.dump(wanted, f)
        return True

    monkeypatch.setattr(volumesvc_aio, "_install_venv", record)
    venv = str(tmp_path / "venv")
    assert volumesvc_aio.install_venv(venv, ["pkg==1"]) is True
    assert volumesvc_aio.install_venv(venv, ["pkg==1"]) is False
    assert volumesvc_aio.install_venv(venv, ["pkg==2"]) is True
    assert seen == [["pkg==1"], ["pkg==2"]]
