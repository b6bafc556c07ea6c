"""Fixtures of the volume unit tests: config, a context, FakeCinder with a multiattach type."""

import pytest

from tests.fixtures.cinder import FakeCinder
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext


@pytest.fixture
def conf():
    """The multiattach retries, short and few: 3 reservation retries, 10 s of detach wait."""
    conf = get_conf(default_config_files=[])
    conf.set_override("attachment_reserve_retries", 3, group="cinder")
    conf.set_override("attachment_reserve_interval", 0.5, group="cinder")
    conf.set_override("begin_detaching_timeout", 10.0, group="cinder")
    return conf


@pytest.fixture
def ctx():
    return RequestContext(user_id="u", project_id="p")


@pytest.fixture
def cinder():
    """FakeCinder with the volume type ``multi`` (``multiattach: <is> True``)."""
    fake = FakeCinder()
    fake.create_volume_type("multi", {"multiattach": "<is> True"})
    return fake
