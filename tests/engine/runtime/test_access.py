"""Pinot's principals and the one access rule (engine.runtime.access), and Pinot's keys read
from properties files and the environment (engine.runtime.properties)."""

from __future__ import annotations

import base64

import argon2
import bcrypt
import pytest

from engine.common.errors import ConfigError
from engine.runtime.access import AccessType, access_control, basic_token
from engine.runtime.properties import PinotProperties, load_properties
from engine.runtime.service_auth import auth_headers

BASIC = "org.apache.pinot.controller.api.access.BasicAuthAccessControlFactory"
P = "controller.admin.access.control.principals"


def controller(**keys: str):
    return access_control(PinotProperties({
        "controller.admin.access.control.factory.class": BASIC, **keys,
    }), "controller")  # fmt: skip


def test_plain_password_token_compared_whole_padding_optional():
    auth = controller(**{P: "admin, user", f"{P}.admin.password": "verysecret",
                         f"{P}.user.password": "p:w", f"{P}.user.tables": "t1,t2_OFFLINE",
                         f"{P}.user.permissions": "read"})  # fmt: skip
    admin = auth.principal(basic_token("admin", "verysecret"))
    assert admin is not None and admin.all_tables and admin.allows("DELETE", "any")
    # Pinot deletes every '=': a client that drops the padding is the same client
    assert auth.principal(basic_token("admin", "verysecret").rstrip("=") + "  ") is admin
    assert auth.principal(basic_token("admin", "verysecret").replace("Basic", "basic")) is None
    assert auth.principal(basic_token("admin", "wrong")) is None
    assert auth.principal(None) is None and auth.principal("") is None
    user = auth.login("user", "p:w")  # a ':' in the password is kept
    assert user.has_table("t1") and user.has_table("t2_REALTIME") and not user.has_table("t3")
    assert user.allows(AccessType.READ, "t1_OFFLINE")
    assert not user.allows(AccessType.UPDATE, "t1") and not user.allows(AccessType.READ, "t3")


@pytest.mark.parametrize("hashed", [
    bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode(),
    argon2.PasswordHasher(time_cost=1, memory_cost=8192).hash("s3cret"),
])  # fmt: skip
def test_hashed_passwords_checked_once_then_remembered(hashed):
    auth = controller(**{P: "ops", f"{P}.ops.password": hashed, f"{P}.ops.excludeTables": "x"})
    token = basic_token("ops", "s3cret")
    ops = auth.principal(token)
    assert ops is not None and ops.name == "ops" and not ops.has_table("x")
    assert not ops.all_tables
    assert auth.principal(token) is ops  # from the cache now
    assert auth.principal(basic_token("ops", "S3cret")) is None
    assert auth.principal(basic_token("nobody", "s3cret")) is None
    assert auth.principal("Basic !!!not-base64") is None
    assert auth.principal("Basic " + base64.b64encode(b"no-colon").decode()) is None
    assert auth.login("ops", "x" * 100) is None  # bcrypt refuses >72 bytes: no match, no crash


def test_factory_classes_and_bad_principals():
    assert access_control(PinotProperties({}), "controller") is None
    assert access_control(PinotProperties({"pinot.broker.access.control.class":
                          "org.apache.pinot.broker.broker.AllowAllAccessControlFactory"}),
                          "broker") is None  # fmt: skip
    with pytest.raises(ConfigError, match="ZooKeeper-stored users are not supported"):
        access_control(PinotProperties({"controller.admin.access.control.factory.class":
                       "org.apache.pinot.controller.api.access.ZkBasicAuthAccessControlFactory"}),
                       "controller")  # fmt: skip
    with pytest.raises(ConfigError, match="at least one principal"):
        controller()
    with pytest.raises(ConfigError, match="has no password") as err:
        controller(**{P: "admin"})
    assert err.value.field == f"{P}.admin.password"
    with pytest.raises(ConfigError, match="unknown permission"):
        controller(**{P: "a", f"{P}.a.password": "x", f"{P}.a.permissions": "read,admin"})
    server = access_control(PinotProperties({
        "pinot.server.admin.access.control.factory.class":
            "org.apache.pinot.server.access.BasicAuthAccessFactory",
        "pinot.server.admin.access.control.principals": "ctl",
        "pinot.server.admin.access.control.principals.ctl.password": "pw",
        "pinot.server.admin.access.control.principals.ctl.permissions": "admin",
    }), "server")  # fmt: skip
    assert server.login("ctl", "pw").allows("ADMIN")


def test_properties_files_env_keys_and_dynamic_env(tmp_path):
    conf = tmp_path / "pinot-broker.conf"
    conf.write_text(
        "# Pinot's broker config, as is\n"
        "pinot.broker.access.control.principals=admin\n"
        "pinot.broker.access.control.principals.admin.password=FROM_ENV\n"
        "dynamic.env.config=pinot.broker.access.control.principals.admin.password\n"
        "task.auth.token=dXNlcjpwdw\n"
    )
    env = {"SPRIG_PINOT_CONFIG": str(conf), "FROM_ENV": "s3cret",
           "pinot.broker.access.control.principals": "admin,reader", "PATH": "/bin"}  # fmt: skip
    props = load_properties(env)
    assert props["pinot.broker.access.control.principals.admin.password"] == "s3cret"
    assert props.list("pinot.broker.access.control.principals") == ["admin", "reader"]
    assert "PATH" not in props
    assert props.subset("pinot.broker.access.control")["principals"] == "admin,reader"
    assert auth_headers(props, "task.auth") == {"Authorization": "Basic dXNlcjpwdw"}
    assert auth_headers(props, "segment.fetcher.auth") == {}
    with pytest.raises(ConfigError, match="FROM_ENV, which is not set"):
        load_properties({"SPRIG_PINOT_CONFIG": str(conf)})
    with pytest.raises(ConfigError, match="cannot read"):
        load_properties({"SPRIG_PINOT_CONFIG": str(tmp_path / "missing.conf")})


def test_service_token_header_and_prefix_overrides():
    props = PinotProperties({"a.token": "Bearer xyz", "a.prefix": "Bearer",
                             "b.token": "Basic abc", "c.token": "t", "c.header": "X-Auth"})  # fmt: skip
    assert auth_headers(props, "a") == {"Authorization": "Bearer xyz"}
    assert auth_headers(props, "b") == {"Authorization": "Basic abc"}
    assert auth_headers(props, "c") == {"X-Auth": "Basic t"}
