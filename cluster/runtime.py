"""The controller's long-lived background work inside the serving process.

`start()` runs once per controller process after the WSGI worker has booted (see
config/gunicorn.py) and `stop()` when it exits. The controller issue fills this in with the
ZooKeeper session, leader election and the periodic-task scheduler.
"""


def start() -> None:
    """Start the controller's background work (nothing yet)."""


def stop() -> None:
    """Stop the controller's background work (nothing yet)."""
