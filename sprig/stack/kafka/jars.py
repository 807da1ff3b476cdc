"""Apache Kafka's jars for the local broker and Kafka's own tools, resolved once with Maven.

`pom.xml` beside this file pins the versions. `mvn dependency:copy-dependencies` copies the
whole runtime classpath into one folder under the user's cache, named after the pom's hash, so
set-up resolves it once (as `.venv` is made once) and a changed pom resolves a new folder.
`bin/sprig` runs `python -m sprig.stack.kafka` before any verb; the service code calls
`kafka_libs()`, which resolves only when the folder is missing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sprig.stack.process import ServiceError

POM = Path(__file__).with_name("pom.xml")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
MAVEN_HINT = "Install it with: apt-get install maven"
RESOLVE_TIMEOUT_S = 900


class MavenMissingError(ServiceError):
    """Kafka's jars come from Maven Central through `mvn`, which is not installed."""


def kafka_version() -> str:
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert match, f"{POM} names no kafka.version"
    return match.group(1)


def libs_dir() -> Path:
    """Where the classpath folder for this pom lives (it may not exist yet).
    $SPRIG_KAFKA_LIBS points at a ready folder instead (e.g. the libs/ of Kafka's tarball)."""
    if os.environ.get("SPRIG_KAFKA_LIBS"):
        return Path(os.environ["SPRIG_KAFKA_LIBS"])
    cache = Path(os.environ.get("SPRIG_CACHE_DIR") or Path.home() / ".cache" / "sprig")
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache / f"kafka-{kafka_version()}-{digest}" / "libs"


def check_maven() -> str:
    """The path of `mvn`, or a MavenMissingError that says how to install it."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenMissingError(
            "Maven ('mvn') is required to fetch Apache Kafka's jars from Maven Central and is "
            f"not on PATH. {MAVEN_HINT}"
        )
    return mvn


def _ready(folder: Path) -> bool:
    return any(folder.glob("kafka_2.13-*.jar")) and any(folder.glob("kafka-tools-*.jar"))


def kafka_libs(quiet: bool = False) -> Path:
    """The folder holding every jar of the local Kafka's classpath, resolving it first when
    missing (a minute or two from an empty Maven cache). Concurrent callers resolve once."""
    target = libs_dir()
    if _ready(target):
        return target
    if os.environ.get("SPRIG_KAFKA_LIBS"):
        raise ServiceError(
            f"kafka: SPRIG_KAFKA_LIBS={target} holds no kafka_2.13 and kafka-tools jars"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving the same pom
        if not _ready(target):
            _resolve(target, quiet)
    return target


def _resolve(target: Path, quiet: bool) -> None:
    mvn = check_maven()
    if not quiet:
        print(f"sprig: fetching Apache Kafka {kafka_version()}'s jars from Maven Central into "
              f"{target} (once)", file=sys.stderr, flush=True)  # fmt: skip
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=target.parent))
    log = target.parent / "mvn.log"
    argv = [mvn, "-B", "-f", str(POM), "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]  # fmt: skip
    try:
        with open(log, "wb") as out:
            code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=RESOLVE_TIMEOUT_S, check=False).returncode  # fmt: skip
        if code != 0 or not _ready(staging):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise ServiceError(f"kafka: resolving the jars with Maven failed (exit {code}); "
                               f"the end of {log}:\n{tail}")  # fmt: skip
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except subprocess.TimeoutExpired as exc:
        raise ServiceError(f"kafka: Maven took over {RESOLVE_TIMEOUT_S} s; see {log}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
