"""A URLconf for the error tests: the controller's URLs plus two views that crash, one plain
Django and one DRF, to see what a client gets from a 500."""

from django.urls import include, path
from rest_framework.decorators import api_view


def plain_crash(request):
    raise RuntimeError("plain view failed")


@api_view(["GET"])
def api_crash(request):
    raise RuntimeError("api view failed")


urlpatterns = [
    path("crash/plain", plain_crash),
    path("crash/api", api_crash),
    path("", include("config.urls")),
]
handler404 = "cluster.api.errors.handler404"
handler500 = "cluster.api.errors.handler500"
