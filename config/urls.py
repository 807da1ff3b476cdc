from django.urls import include, path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularSwaggerView,
    SpectacularYAMLAPIView,
)

from cluster.api.health import health

# Unknown API paths and crashes answer Pinot's error JSON (pages keep Django's HTML errors).
handler404 = "cluster.api.errors.handler404"
handler500 = "cluster.api.errors.handler500"

urlpatterns = [
    path("health", health, name="health"),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi-schema"),
    path("openapi.yaml", SpectacularYAMLAPIView.as_view(), name="openapi-schema-yaml"),
    path("help", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="swagger-ui"),
    path("", include("cluster.urls")),
    path("", include("console.urls")),
    path("", include("monitoring.urls")),
]
