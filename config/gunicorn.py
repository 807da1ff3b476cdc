"""gunicorn settings for the controller: one worker process with threads, because the
controller holds one ZooKeeper session and runs its periodic tasks in that process."""

import os

workers = 1
worker_class = "gthread"
threads = int(os.environ.get("SPRIG_CONTROLLER_THREADS", "16"))
timeout = 120
graceful_timeout = 10
accesslog = os.environ.get("SPRIG_CONTROLLER_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("SPRIG_LOG_LEVEL", "info").lower()
# Pinot clients send DOWNLOAD_URI and UPLOAD_TYPE headers, whose names contain underscores;
# gunicorn drops such headers unless told to map them.
header_map = "dangerous"


def post_worker_init(worker):
    from cluster import runtime

    runtime.start()


def worker_exit(server, worker):
    from cluster import runtime

    runtime.stop()
