"""docker-compose.yml: it parses, has the production topology, and every Sprig container runs
a real CLI verb with arguments the verb accepts."""

from pathlib import Path

import pytest
import yaml

from sprig.cli import build_parser

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_the_topology_is_complete(compose):
    services = compose["services"]
    for name in ("zookeeper", "kafka", "redis", "postgres", "controller", "broker", "minion"):
        assert name in services, name
    servers = [name for name, svc in services.items() if svc.get("command", [None])[0] == "server"]
    assert len(servers) == 2


def test_every_sprig_command_is_a_real_verb(compose):
    parser = build_parser()
    sprig_services = {
        n: s for n, s in compose["services"].items() if s.get("image") == "sprig:latest"
    }
    assert len(sprig_services) == 5
    for name, service in sprig_services.items():
        command = service["command"]
        try:
            args = parser.parse_args(command)
        except SystemExit as exc:  # argparse exits on an unknown verb or flag
            pytest.fail(f"{name}: `sprig {' '.join(command)}` is not a valid CLI call ({exc})")
        assert callable(args.func), name


def test_sprig_containers_share_the_local_stack_variables(compose):
    controller_env = compose["services"]["controller"]["environment"]
    for key in (
        "SPRIG_ZK",
        "SPRIG_REDIS_URL",
        "SPRIG_KAFKA_BROKERS",
        "DATABASE_URL",
        "SPRIG_DEEP_STORE_URI",
    ):
        assert key in controller_env, key


def test_instances_advertise_addresses_other_containers_can_reach(compose):
    services = compose["services"]
    assert services["controller"]["environment"]["SPRIG_CONTROLLER_HOST"] == "controller"
    for name in ("broker", "server-1", "server-2"):
        assert services[name]["environment"]["SPRIG_INSTANCE_HOST"] == name
        assert services[name]["environment"]["SPRIG_ZK"] == "zookeeper:2181"
