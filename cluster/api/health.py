from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import api_view, permission_classes, renderer_classes
from rest_framework.permissions import AllowAny
from rest_framework.renderers import StaticHTMLRenderer


@extend_schema(
    summary="Controller health",
    description="Answers `OK` while the controller process serves requests (Pinot's `GET /health`).",
    responses={200: OpenApiResponse(description="`OK`")},
    tags=["Health"],
)
@api_view(["GET"])
@permission_classes([AllowAny])
@renderer_classes([StaticHTMLRenderer])
def health(request: HttpRequest) -> HttpResponse:
    return HttpResponse("OK", content_type="text/plain")
