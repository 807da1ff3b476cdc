"""Settings shared by every environment, read from the environment with laptop defaults.

Every variable is listed in the README. Production overrides by environment only.
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from engine.common.errors import ConfigError
from engine.runtime.access import access_control
from engine.runtime.properties import process_properties

ROOT_DIR = Path(__file__).resolve().parents[2]
env = environ.Env()

# --- where the controller keeps its files ------------------------------------------------
DATA_DIR = Path(env.str("SPRIG_DATA_DIR", default=str(ROOT_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)
# Pinot's controller.data.dir: the deep store. A local directory or any fsspec URL.
DEEP_STORE_URI = env.str("SPRIG_DEEP_STORE_URI", default=str(DATA_DIR / "deepstore"))
# Data files are read and written only under these roots and the deep store (tasks.data_roots):
# a minion task's inputDirURI and a URI push read under the input (or output) roots, its
# outputDirURI writes under the output roots. Local directories or fsspec URLs (s3://b/p).
INPUT_ROOTS = env.list("SPRIG_INPUT_ROOTS", default=[str(DATA_DIR / "incoming")])
OUTPUT_ROOTS = env.list("SPRIG_OUTPUT_ROOTS", default=[])
# URLs from requests (lag-alert webhooks, DOWNLOAD_URIs) reach only public addresses, and
# these hosts (names or networks) although loopback, link-local or private; or any such host
OUTBOUND_ALLOWED_HOSTS = env.list("SPRIG_OUTBOUND_ALLOWED_HOSTS", default=[])
OUTBOUND_ALLOW_PRIVATE = env.bool("SPRIG_OUTBOUND_ALLOW_PRIVATE", default=False)
# what one uploaded segment may unpack to, read from the archive's headers before extracting
SEGMENT_MAX_UNPACKED_BYTES = env.int("SPRIG_SEGMENT_MAX_UNPACKED_BYTES", default=8 << 30)

# --- cluster services -------------------------------------------------------------------
CLUSTER_NAME = env.str("SPRIG_CLUSTER_NAME", default="PinotCluster")
ZK_ADDRESS = env.str("SPRIG_ZK", default="127.0.0.1:2181")
REDIS_URL = env.str("SPRIG_REDIS_URL", default="redis://127.0.0.1:6379/0")
KAFKA_BROKERS = env.str("SPRIG_KAFKA_BROKERS", default="127.0.0.1:9092")
# The name the consumer-lag APIs (Burrow paths, kafka-lag-exporter labels) give that Kafka cluster
KAFKA_CLUSTER_NAME = env.str("SPRIG_KAFKA_CLUSTER_NAME", default="local")
SPARK_MASTER = env.str("SPRIG_SPARK_MASTER", default="local[*]")
CONTROLLER_HOST = env.str("SPRIG_CONTROLLER_HOST", default="127.0.0.1")
CONTROLLER_PORT = env.int("SPRIG_CONTROLLER_PORT", default=9000)
# what servers and minions are given to call back (download URLs, the completion protocol's
# controller, minion uploads): the controller's first listener (`sprig controller` sets both)
CONTROLLER_PROTOCOL = env.str("SPRIG_CONTROLLER_PROTOCOL", default="http")
CONTROLLER_URL = f"{CONTROLLER_PROTOCOL}://{CONTROLLER_HOST}:{CONTROLLER_PORT}"

# --- controller behaviour (Pinot's controller.* settings) --------------------------------
ZK_SESSION_TIMEOUT_S = env.float("SPRIG_ZK_SESSION_TIMEOUT_S", default=10.0)
ZK_CONNECT_TIMEOUT_S = env.float("SPRIG_ZK_CONNECT_TIMEOUT_S", default=5.0)
ZK_REQUEST_TIMEOUT_S = env.float("SPRIG_ZK_REQUEST_TIMEOUT_S", default=10.0)
# the largest znode the controller writes (schemas, table configs, ideal states, ...): bigger
# is a 413, since ZooKeeper drops the session of a client that sends over its jute.maxbuffer
ZK_MAX_ZNODE_BYTES = env.int("SPRIG_ZK_MAX_ZNODE_BYTES", default=1_000_000)
# controller.tenant.isolation.enable: new servers/brokers join DefaultTenant (else untagged)
TENANT_ISOLATION_ENABLED = env.bool("SPRIG_TENANT_ISOLATION", default=True)
# periodic tasks: Pinot's period syntax ("6h", "5m", "30s", "1d"); initial delay in seconds
PERIODIC_TASK_FREQUENCIES = {
    "RetentionManager": env.str("SPRIG_RETENTION_FREQUENCY", default="6h"),
    "SegmentStatusChecker": env.str("SPRIG_STATUS_CHECKER_FREQUENCY", default="5m"),
    "ClusterStateReconciler": env.str("SPRIG_RECONCILE_FREQUENCY", default="10m"),
    # controller.task.frequencyPeriod: every minion task type on every table ("-1s" = off)
    "PinotTaskManager": env.str("SPRIG_TASK_FREQUENCY_PERIOD", default="-1s"),
    "TaskMetricsEmitter": env.str("SPRIG_TASK_METRICS_EMITTER_FREQUENCY", default="5m"),
    # controller.segment.relocator.frequencyPeriod
    "SegmentRelocator": env.str("SPRIG_SEGMENT_RELOCATOR_FREQUENCY", default="1h"),
}
PERIODIC_TASK_INITIAL_DELAY_S = env.float("SPRIG_PERIODIC_TASK_INITIAL_DELAY_S", default=120.0)
# how often the leader re-aggregates external views from the instances' current states
EXTERNAL_VIEW_INTERVAL_S = env.float("SPRIG_EXTERNAL_VIEW_INTERVAL_S", default=1.0)
# deleted segments are kept this long under Deleted_Segments in the deep store
DELETED_SEGMENTS_RETENTION = env.str("SPRIG_DELETED_SEGMENTS_RETENTION", default="7d")
# a no-downtime rebalance waits at most this long for the external view to converge
REBALANCE_STABILIZATION_TIMEOUT_S = env.float("SPRIG_REBALANCE_TIMEOUT_S", default=3600.0)
REBALANCE_CHECK_INTERVAL_S = env.float("SPRIG_REBALANCE_CHECK_INTERVAL_S", default=1.0)
# timeout of a query forwarded to a broker by POST /sql
SQL_FORWARD_TIMEOUT_S = env.float("SPRIG_SQL_FORWARD_TIMEOUT_S", default=60.0)
# --- minion tasks (Pinot's controller.task.* settings) -------------------------------------
# modules that register extra task types (tasks.registry), imported by controller and minions
MINION_TASK_PLUGINS = env.list("SPRIG_MINION_TASK_PLUGINS", default=[])
# how often the lead controller syncs minion reports, times out, retries and sends subtasks
TASK_DRIVER_INTERVAL_S = env.float("SPRIG_TASK_DRIVER_INTERVAL_S", default=0.25)
# controller.task.expire.time.ms / controller.task.terminalState.expire.time.ms
TASK_EXPIRE_TIME_MS = env.int("SPRIG_TASK_EXPIRE_TIME_MS", default=24 * 3_600_000)
TASK_TERMINAL_STATE_EXPIRE_TIME_MS = env.int(
    "SPRIG_TASK_TERMINAL_STATE_EXPIRE_TIME_MS", default=72 * 3_600_000
)
# cron `schedule`s in table task configs run without Pinot's controller.task.scheduler.enabled
TASK_SCHEDULER_ENABLED = env.bool("SPRIG_TASK_SCHEDULER_ENABLED", default=True)
# controller.task.skipLateCronSchedule / controller.task.maxCronScheduleDelayInSeconds
TASK_SKIP_LATE_CRON_SCHEDULE = env.bool("SPRIG_TASK_SKIP_LATE_CRON_SCHEDULE", default=False)
TASK_MAX_CRON_SCHEDULE_DELAY_S = env.int("SPRIG_TASK_MAX_CRON_SCHEDULE_DELAY_S", default=600)
# how often the leader re-reads the table configs' cron schedules
TASK_SCHEDULE_SYNC_S = env.float("SPRIG_TASK_SCHEDULE_SYNC_S", default=5.0)

# --- Django -----------------------------------------------------------------------------
SECRET_KEY = env.str(
    "DJANGO_SECRET_KEY", default="sprig-local-development-key-change-me-in-production"
)
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# The names the controller answers to (a request naming another Host is a 400, so a DNS
# rebinding page cannot reach it): this machine's loopback names and SPRIG_CONTROLLER_HOST,
# which servers and minions use. Add the name users browse to.
ALLOWED_HOSTS = env.list(
    "SPRIG_ALLOWED_HOSTS",
    default=list(dict.fromkeys(["localhost", "127.0.0.1", "[::1]", CONTROLLER_HOST])),
)
# Origins other than the controller's own whose browser requests may change state (a console
# served through a proxy under another name): scheme://host[:port] each.
CSRF_TRUSTED_ORIGINS = env.list("SPRIG_TRUSTED_ORIGINS", default=[])
# Pinot's keys (SPRIG_PINOT_CONFIG files, or environment variables named as the keys):
# controller.admin.access.control.* principals (cluster.api.access), TLS, service credentials
try:
    PINOT_PROPERTIES = process_properties()
    ACCESS_CONTROL = access_control(PINOT_PROPERTIES, "controller")  # None: open
except ConfigError as exc:
    raise ImproperlyConfigured(f"invalid config {exc.field}: {exc.message}") from None
AUTH_ENABLED = ACCESS_CONTROL is not None
if env.bool("SPRIG_AUTH_ENABLED", default=False) and not AUTH_ENABLED:
    raise ImproperlyConfigured(
        "SPRIG_AUTH_ENABLED is replaced by Pinot's keys: set controller.admin.access.control."
        "factory.class=org.apache.pinot.controller.api.access.BasicAuthAccessControlFactory "
        "and controller.admin.access.control.principals (see the README)"
    )
# /zk/put and /zk/delete (principals limited to no table once auth is on); false: off
ZK_WRITES_ENABLED = env.bool("SPRIG_ZK_WRITES_ENABLED", default=True)

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'controller.sqlite3'}")
}
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
    "monitoring",
]

MIDDLEWARE = [
    # outermost: any non-JSON 404/405/500 on an API path becomes Pinot's error JSON
    "cluster.api.errors.ApiJsonErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # after CommonMiddleware, which refuses a Host outside ALLOWED_HOSTS
    "cluster.api.cross_origin.CrossOriginProtectionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # request.user: the principal signed in to the console (cluster.api.access)
    "cluster.api.access.PrincipalSessionMiddleware",
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
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# serve static files straight from static/ and the apps (no collectstatic step for a local run)
WHITENOISE_USE_FINDERS = True

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies must say application/json (a cross-site form cannot send that without a
    # preflight); the endpoints Pinot documents as file uploads add multipart themselves
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    # Pinot's principals: Authorization: Basic for scripts, the console's session (with its
    # CSRF check) for the pages; Pinot's permission and table rule (cluster.api.access)
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "cluster.api.access.BasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["cluster.api.access.PinotAccessPermission"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "cluster.api.errors.pinot_exception_handler",
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
    "loggers": {"kazoo": {"level": "WARNING"}, "apscheduler": {"level": "WARNING"}},
}
