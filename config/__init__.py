"""The controller's Django project: settings, URL routes, WSGI entry and the Celery app."""
