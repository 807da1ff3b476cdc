"""The minion task framework: generators on the controller, Celery executors on the minions."""
