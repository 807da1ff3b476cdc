"""`sprig minion`: a minion, i.e. a Celery worker on Redis that runs minion task executors."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
from pathlib import Path

from sprig.runtime import REPO_ROOT


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "minion",
        help="run a minion: a Celery worker that executes minion tasks",
        description="Run a minion worker. It listens on one Celery queue per instance tag "
        "(Pinot's minionInstanceTag; the default is minion_untagged) on the Redis at $SPRIG_REDIS_URL.",
    )
    parser.add_argument(
        "--tags",
        default=os.environ.get("SPRIG_MINION_TAGS", "minion_untagged"),
        help="comma-separated instance tags, one queue each (default: minion_untagged)",
    )
    parser.add_argument(
        "--name",
        default=os.environ.get("SPRIG_MINION_NAME", "minion"),
        help="instance name, unique per host: the minion registers as Minion_<host>_<name>",
    )
    parser.add_argument(
        "--concurrency", type=int, default=int(os.environ.get("SPRIG_MINION_CONCURRENCY", "1"))
    )
    parser.add_argument("--loglevel", default=os.environ.get("SPRIG_LOG_LEVEL", "info"))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    # read by tasks.membership, which registers Minion_<host>_<name> with these tags
    os.environ["SPRIG_MINION_TAGS"] = args.tags
    os.environ["SPRIG_MINION_NAME"] = args.name
    # the subtasks run in pool processes: their metrics meet in prometheus_client's
    # multiprocess files, which the worker's main process serves (tasks.minion_metrics)
    # (one folder per minion name under its data dir, emptied at start as prometheus_client
    # asks, so nothing is left in /tmp by a process that exec()s into Celery)
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        data_root = Path(os.environ.get("SPRIG_DATA_DIR", REPO_ROOT / "var"))
        metrics_dir = data_root / "minion-metrics" / args.name
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    hostname = f"Minion_{args.name}_{socket.gethostname()}_{os.getpid()}"
    argv = [
        sys.executable, "-m", "celery",
        "-A", "tasks.celery_app",
        "worker",
        "-Q", args.tags,
        "--hostname", hostname,
        "--concurrency", str(args.concurrency),
        "--loglevel", args.loglevel,
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    os.execv(sys.executable, argv)
    return 0  # not reached
