"""A developer's laptop and the quickstart: everything local.

Django's debug pages stay off unless DJANGO_DEBUG=true: the quickstart's controller listens on
every interface, and a debug page shows settings and stack traces to whoever reaches the port.
The REST API answers errors in JSON either way.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=False)
