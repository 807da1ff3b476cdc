"""The minions' Celery app, configured from Django settings (broker and results on Redis).

The minions run its tasks (tasks.tasks) and the controller sends them through it
(tasks.logic.celery_link), so it lives with them. Start a minion with ``sprig minion``, which
runs ``celery -A tasks.celery_app worker -Q minion_untagged``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sprig")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["tasks"])
