"""Pinot's ``/auth/info`` and ``/auth/verify``: what a client (Pinot's UI, a script) asks
before it signs in. Both are open, as in Pinot."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.access import PrincipalUser
from cluster.api.common import query
from engine.runtime.access import AccessType

TAG = ["Auth"]


class AuthInfoView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(summary="The sign-in workflow: BASIC when principals are configured, else NONE",
                   tags=TAG, responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response({"workflow": "BASIC" if settings.AUTH_ENABLED else "NONE"})


class VerifyParams(serializers.Serializer):
    tableName = serializers.CharField(required=False)
    accessType = serializers.ChoiceField([a.value for a in AccessType], required=False,
                                         default=AccessType.READ.value)  # fmt: skip
    endpointUrl = serializers.CharField(required=False)


class AuthVerifyView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(summary="Whether the caller may do accessType on tableName (true|false)",
                   tags=TAG, parameters=[VerifyParams], responses={200: OpenApiTypes.BOOL})  # fmt: skip
    def get(self, request):
        if not settings.AUTH_ENABLED:
            return Response(True)
        params = query(request, VerifyParams)
        user = request.user
        return Response(isinstance(user, PrincipalUser) and user.principal.allows(
            params["accessType"], params.get("tableName") or None))  # fmt: skip
