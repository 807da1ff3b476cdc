"""Session-wide real services. Each starts only when a collected test asks for it and is stopped
when the session ends, so the fast unit tests start nothing. The JVM services (ZooKeeper, Kafka)
are launched as soon as collection shows a test needs them, so their start-up overlaps the tests
that run first; the fixture then waits until the service answers."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprig.stack import KafkaService, RedisService, ZooKeeperService

REPO_ROOT = Path(__file__).resolve().parents[1]
PINOT_EXAMPLES = Path(
    os.environ.get("SPRIG_PINOT_EXAMPLES", REPO_ROOT.parent / "shared" / "pinot-examples")
)


# fixture name -> the service it is; launched early by pytest_collection_finish
_EARLY = {"zookeeper": ZooKeeperService, "kafka": KafkaService}
_launched: dict[str, object] = {}
_services_dir = Path(tempfile.mkdtemp(prefix="sprig-test-services-"))
# the session's Kafka: a small heap, one node
KAFKA_HEAP = "384m"


def pytest_collection_finish(session: pytest.Session) -> None:
    wanted = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    for name in _EARLY:
        if name in wanted and name not in _launched:
            service = _new(name)
            service.start()  # no wait: the fixture waits when a test first needs it
            _launched[name] = service


def pytest_sessionfinish(session: pytest.Session) -> None:
    for service in _launched.values():
        service.stop()
    shutil.rmtree(_services_dir, ignore_errors=True)


def _new(name: str):
    if name == "kafka":
        return KafkaService(_services_dir, heap=KAFKA_HEAP)
    return _EARLY[name](_services_dir)


def _run(name: str, factory) -> Iterator:
    service = _launched.get(name)
    if service is None:
        service = _launched[name] = factory()
        service.start()
    try:
        service.wait_ready()
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperService]:
    """A real ZooKeeper server; `.address` is its connect string."""
    yield from _run("zookeeper", lambda: _new("zookeeper"))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisService]:
    """A real redis-server; `.url` is its redis:// URL."""
    yield from _run("redis", lambda: RedisService(_services_dir))


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaService]:
    """A real Apache Kafka node (KRaft); `.bootstrap_servers` is its address."""
    yield from _run("kafka", lambda: _new("kafka"))


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
