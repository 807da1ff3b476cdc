"""Start, health-check and stop a set of services as one unit."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sprig.stack.kafka import KafkaService
from sprig.stack.process import ServiceError
from sprig.stack.services import RedisService, Service, ZooKeeperService
from sprig.stack.supervisor import write_state_file

# A service whose variable is already set is external: the stack uses it and starts nothing.
EXTERNAL_ENV = {
    "zookeeper": "SPRIG_ZK",
    "redis": "SPRIG_REDIS_URL",
    "kafka": "SPRIG_KAFKA_BROKERS",
}
ALL_SERVICES = ("zookeeper", "redis", "kafka")


class LocalStack:
    """ZooKeeper, Redis and Kafka on free ports under `workdir`, each logging to its own file."""

    def __init__(
        self,
        workdir: Path,
        services: tuple[str, ...] = ALL_SERVICES,
        *,
        ports: dict[str, int] | None = None,
        honour_external: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.external: dict[str, str] = {}
        self.services: dict[str, Service] = {}
        ports = ports or {}
        classes = {"zookeeper": ZooKeeperService, "redis": RedisService, "kafka": KafkaService}
        for name in services:
            if name not in classes:
                raise ServiceError(
                    f"unknown service {name!r}; choose from {', '.join(ALL_SERVICES)}"
                )
            if honour_external and os.environ.get(EXTERNAL_ENV[name]):
                self.external[name] = os.environ[EXTERNAL_ENV[name]]
                continue
            self.services[name] = classes[name](
                self.workdir, ports.get(name), strict_port=name in ports
            )

    @property
    def zookeeper(self) -> ZooKeeperService:
        return self.services["zookeeper"]  # type: ignore[return-value]

    @property
    def redis(self) -> RedisService:
        return self.services["redis"]  # type: ignore[return-value]

    @property
    def kafka(self) -> KafkaService:
        return self.services["kafka"]  # type: ignore[return-value]

    def start(self) -> LocalStack:
        """Start every service, then wait for all of them; on any failure stop them all."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            # processes are created on this thread so their parent-death signal is tied to it
            for service in self.services.values():
                service.start()
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=_collect(service.wait_ready, errors), name=f"ready-{name}")
                for name, service in self.services.items()
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for service in reversed(list(self.services.values())):
            service.stop()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """The variables that point the controller, servers, brokers and minions at this stack."""
        env = {EXTERNAL_ENV[name]: value for name, value in self.external.items()}
        if "zookeeper" in self.services:
            env["SPRIG_ZK"] = self.zookeeper.address
        if "redis" in self.services:
            env["SPRIG_REDIS_URL"] = self.redis.url
        if "kafka" in self.services:
            env["SPRIG_KAFKA_BROKERS"] = self.kafka.bootstrap_servers
        return env

    def describe(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for name, service in self.services.items():
            rows.append(
                {
                    "service": name,
                    "port": service.port,
                    "pid": service.pid,
                    "log": str(service.log_path),
                    "address": _address(service),
                }
            )
        for name, value in self.external.items():
            rows.append(
                {
                    "service": name,
                    "port": None,
                    "pid": None,
                    "log": None,
                    "address": f"{value} (external)",
                }
            )
        return rows

    def write_state(self, path: Path, **extra: object) -> None:
        write_state_file(path, {"services": self.describe(), "env": self.env(), **extra})


def _address(service: Service) -> str:
    if isinstance(service, ZooKeeperService):
        return service.address
    if isinstance(service, RedisService):
        return service.url
    if isinstance(service, KafkaService):
        return service.bootstrap_servers
    return f"127.0.0.1:{service.port}"


def _collect(fn, errors: list[BaseException]):
    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    return run
