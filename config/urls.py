from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from cluster.api.health import health

# Unknown API paths and crashes answer Pinot's error JSON (pages keep Django's HTML errors).
handler404 = "cluster.api.errors.handler404"
handler500 = "cluster.api.errors.handler500"

urlpatterns = [
    path("health", health, name="health"),
    path("openapi.json", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("help", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="swagger-ui"),
    path("", include("cluster.urls")),
    path("", include("console.urls")),
    path("", include("monitoring.urls")),
]
