"""engine.runtime.properties: one reader of Pinot's keys for every process (files with
jproperties, a process's own --config file, dotted environment keys) and its typed getters."""

from __future__ import annotations

import re

import pytest

from engine.common.errors import ConfigError
from engine.runtime.properties import PinotProperties, load_properties


def test_later_sources_win_and_errors_name_where_the_value_came_from(tmp_path):
    shared, own = tmp_path / "pinot.conf", tmp_path / "broker.conf"
    shared.write_text("pinot.broker.query.log.length=10\npinot.broker.a=shared\n")
    own.write_text("pinot.broker.a=own\npinot.broker.enable.query.cancellation=maybe\n")
    env = {"SPRIG_PINOT_CONFIG": str(shared), "pinot.broker.query.log.length": "20"}
    props = load_properties(env, files=[own])
    assert props.get("pinot.broker.a") == "own"  # the process's own file over the shared one
    assert props.get_int("pinot.broker.query.log.length", -1) == 20  # the environment over both
    assert props.get_bool("absent", True) is True and props.get("absent", "d") == "d"
    with pytest.raises(
        ConfigError, match=f"must be true or false, got 'maybe' .*{re.escape(str(own))}"
    ):
        props.get_bool("pinot.broker.enable.query.cancellation", True)


def test_one_file_with_jproperties_and_its_bad_inputs(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# a comment\npinot.broker.x = 1.5\npinot.broker.y=\n")
    props = PinotProperties.load(conf)
    assert props.source == str(conf) and props.get_float("pinot.broker.x", 0) == 1.5
    assert props.get("pinot.broker.y", "empty") == "empty" and "pinot.broker.y" in props
    with pytest.raises(ConfigError, match=r"whole number, got 1\.5"):
        props.get_int("pinot.broker.x", 0)
    assert PinotProperties.load(None) == {}
    with pytest.raises(ConfigError, match="cannot read"):
        PinotProperties.load(tmp_path / "missing.conf")
    conf.write_text("bad=\\uZZZZ\n")
    with pytest.raises(ConfigError, match="is not a properties file"):
        load_properties({"SPRIG_PINOT_CONFIG": str(conf)})
