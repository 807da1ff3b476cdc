"""Settings shared by every environment, read from the environment with laptop defaults.

Every variable is listed in the README. Production overrides by environment only.
"""

from pathlib import Path

import environ

ROOT_DIR = Path(__file__).resolve().parents[2]
env = environ.Env()

# --- where the controller keeps its files ------------------------------------------------
DATA_DIR = Path(env.str("SPRIG_DATA_DIR", default=str(ROOT_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)
# Pinot's controller.data.dir: the deep store. A local directory or any fsspec URL.
DEEP_STORE_URI = env.str("SPRIG_DEEP_STORE_URI", default=str(DATA_DIR / "deepstore"))

# --- cluster services -------------------------------------------------------------------
CLUSTER_NAME = env.str("SPRIG_CLUSTER_NAME", default="PinotCluster")
ZK_ADDRESS = env.str("SPRIG_ZK", default="127.0.0.1:2181")
REDIS_URL = env.str("SPRIG_REDIS_URL", default="redis://127.0.0.1:6379/0")
KAFKA_BROKERS = env.str("SPRIG_KAFKA_BROKERS", default="127.0.0.1:9092")
SPARK_MASTER = env.str("SPRIG_SPARK_MASTER", default="local[*]")
CONTROLLER_HOST = env.str("SPRIG_CONTROLLER_HOST", default="127.0.0.1")
CONTROLLER_PORT = env.int("SPRIG_CONTROLLER_PORT", default=9000)

# --- Django -----------------------------------------------------------------------------
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="sprig-local-development-key-change-me-in-production")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["*"])
AUTH_ENABLED = env.bool("SPRIG_AUTH_ENABLED", default=False)

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'controller.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "cluster",
    "console",
    "tasks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ROOT_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

STATIC_URL = "/static/"
STATICFILES_DIRS = [ROOT_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated" if AUTH_ENABLED else "rest_framework.permissions.AllowAny"
    ],
    "UNAUTHENTICATED_USER": None if not AUTH_ENABLED else "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Sprig controller API",
    "DESCRIPTION": "Pinot-compatible controller REST API: schemas, tables, segments, tenants, "
    "instances, minion tasks and periodic tasks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # the machines have no internet: Swagger UI is served from the sidecar package
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery (minions) -------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = "minion_untagged"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("SPRIG_LOG_LEVEL", default="INFO")},
    "loggers": {"kazoo": {"level": "WARNING"}},
}
