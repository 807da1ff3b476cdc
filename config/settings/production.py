"""Production: configuration only from the environment; a secret key is required."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
# The console is served over HTTPS (a TLS proxy in front): cookies only over HTTPS, and
# browsers told to use HTTPS only (HSTS, sent on HTTPS responses)
SESSION_COOKIE_SECURE = env.bool("SPRIG_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env.int("SPRIG_HSTS_SECONDS", default=31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SPRIG_HSTS_INCLUDE_SUBDOMAINS", default=False)
# the proxy's X-Forwarded-Proto tells Django a request came in over HTTPS
if env.bool("SPRIG_BEHIND_TLS_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
