"""Session-wide real services. Each starts the first time a test asks for it and is stopped
when the session ends, so the fast unit tests start nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprig.stack import KafkaService, RedisService, ZooKeeperService

REPO_ROOT = Path(__file__).resolve().parents[1]
PINOT_EXAMPLES = Path(
    os.environ.get("SPRIG_PINOT_EXAMPLES", REPO_ROOT.parent / "shared" / "pinot-examples")
)


@pytest.fixture(scope="session")
def services_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("services")


def _run(service) -> Iterator:
    service.start()
    try:
        service.wait_ready()
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def zookeeper(services_dir: Path) -> Iterator[ZooKeeperService]:
    """A real ZooKeeper server; `.address` is its connect string."""
    yield from _run(ZooKeeperService(services_dir))


@pytest.fixture(scope="session")
def redis_server(services_dir: Path) -> Iterator[RedisService]:
    """A real redis-server; `.url` is its redis:// URL."""
    yield from _run(RedisService(services_dir))


@pytest.fixture(scope="session")
def kafka(services_dir: Path) -> Iterator[KafkaService]:
    """A real Kafka-protocol broker; `.bootstrap_servers` is its address."""
    yield from _run(KafkaService(services_dir))


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for the whole test session."""
    from spark_jobs.session import spark_session

    session = spark_session("local[2]", app_name="sprig-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pinot_examples() -> Path:
    """The Apache Pinot example configs and data in ../shared/pinot-examples."""
    if not PINOT_EXAMPLES.is_dir():
        pytest.fail(
            f"the Pinot examples are missing at {PINOT_EXAMPLES} (set SPRIG_PINOT_EXAMPLES)"
        )
    return PINOT_EXAMPLES
