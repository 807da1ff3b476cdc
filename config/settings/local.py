"""A developer's laptop: everything local, debug on unless the environment says otherwise."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
