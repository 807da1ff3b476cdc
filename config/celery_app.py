"""The minions' Celery app, configured from Django settings (broker and results on Redis).

Start a minion with: celery -A config.celery_app worker -Q minion_untagged
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sprig")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["tasks"])
