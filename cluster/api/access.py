"""The controller's access control: Pinot's Basic-auth principals (``engine.runtime.access``,
read from the ``controller.admin.access.control.*`` keys into ``settings.ACCESS_CONTROL``)
applied to every API view through DRF, and to the console's session.

- ``BasicAuthentication``: ``Authorization: Basic ...`` names a principal; a wrong one is 401.
- ``PrincipalSessionMiddleware``: the console's signed-in principal (``sign_in``) as
  ``request.user``, so DRF's ``SessionAuthentication`` (with its CSRF check) and the pages see
  the same principals.
- ``PinotAccessPermission``: Pinot's rule. The access type is the view's ``access_types[method]``
  or comes from the method (POST creates, PUT updates, DELETE deletes, the rest read); the
  table is the path's ``table`` (``table_kwarg``) or the ``tableName``, ``tableNameWithType``
  or ``schemaName`` parameter. Views that learn the table from the body
  (``manual_authorization``: those methods) call ``authorize_table`` themselves; views that can touch every
  table (``all_tables_required``: the znode writes) need a principal limited to none.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.middleware.csrf import rotate_token
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, PermissionDenied
from rest_framework.permissions import BasePermission

from engine.runtime.access import AccessType, Principal
from engine.spi.table_name import split_table_name

UNAUTHORIZED = "HTTP 401 Unauthorized"
SESSION_PRINCIPAL = "sprig_principal"
SESSION_CHECK = "sprig_principal_check"
TABLE_PARAMS = ("tableName", "tableNameWithType", "schemaName")


class PrincipalUser:
    """``request.user`` for a principal: what Django's pages and DRF read of a user."""

    is_authenticated = True
    is_active = True
    is_anonymous = False

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.username = self.pk = principal.name

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


class BasicAuthentication(BaseAuthentication):
    def authenticate(self, request):
        access = settings.ACCESS_CONTROL
        header = request.META.get("HTTP_AUTHORIZATION")
        if access is None or not header:
            return None
        principal = access.principal(header)
        if principal is None:
            raise AuthenticationFailed(UNAUTHORIZED)
        return PrincipalUser(principal), None


class BasicAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents ``BasicAuthentication`` in /openapi.json (HTTP Basic)."""

    target_class = BasicAuthentication
    name = "basicAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {"type": "http", "scheme": "basic"}


class PrincipalSessionMiddleware:
    """Sets ``request.user`` from the session (in place of Django's AuthenticationMiddleware,
    whose users live in the database): the principal signed in, if it still exists with the
    same password; else anonymous."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        request.user = session_user(request)
        return self.get_response(request)


def session_user(request: HttpRequest):
    access = settings.ACCESS_CONTROL
    name = request.session.get(SESSION_PRINCIPAL)
    if access is None or name is None:
        return AnonymousUser()
    principal = access.principals.get(name)
    if principal is None or request.session.get(SESSION_CHECK) != _check(name):
        return AnonymousUser()
    return PrincipalUser(principal)


def sign_in(request: HttpRequest, principal: Principal) -> None:
    """The console's login: a new session key (no fixation) naming the principal."""
    request.session.cycle_key()
    request.session[SESSION_PRINCIPAL] = principal.name
    request.session[SESSION_CHECK] = _check(principal.name)
    rotate_token(request)
    request.user = PrincipalUser(principal)


def _check(name: str) -> str:
    """Ties a session to the principal's configured password: changing it (and restarting)
    signs the principal out everywhere."""
    stored = settings.PINOT_PROPERTIES.get(
        f"controller.admin.access.control.principals.{name}.password", ""
    )
    return hmac.new(settings.SECRET_KEY.encode(), f"{name}:{stored}".encode(),
                    hashlib.sha256).hexdigest()  # fmt: skip


class PinotAccessPermission(BasePermission):
    def has_permission(self, request, view) -> bool:
        if settings.ACCESS_CONTROL is None:
            return True
        principal = principal_of(request)
        if request.method in getattr(view, "manual_authorization", ()):
            return True  # the view checks once it has read the table from the body
        access = access_type(request, view)
        if getattr(view, "all_tables_required", False) and not principal.all_tables:
            raise PermissionDenied(
                f"Permission is denied for {access} '{request.path}': it can change any "
                "table, and this principal is limited to some"
            )
        authorize_table(request, table_of(request, view), access)
        return True


def principal_of(request) -> Principal:
    user = request.user
    if not isinstance(user, PrincipalUser):
        raise NotAuthenticated(UNAUTHORIZED)
    return user.principal


def access_type(request, view) -> AccessType:
    declared = getattr(view, "access_types", {}).get(request.method)
    return declared or AccessType.of_method(request.method)


def authorize_table(request, table: str | None, access: AccessType | None = None) -> None:
    """403 unless the request's principal may do ``access`` (by default the method's) on
    ``table`` (None: on no table in particular). Nothing when access control is off."""
    if settings.ACCESS_CONTROL is None:
        return
    principal = principal_of(request)
    access = access or AccessType.of_method(request.method)
    if principal.allows(access, table):
        return
    where = f" for table '{split_table_name(table)[0]}'" if table else ""
    raise PermissionDenied(f"Permission is denied for {access} '{request.path}'{where}")


def table_of(request, view) -> str | None:
    kwargs = getattr(view, "kwargs", None) or {}
    table = kwargs.get(getattr(view, "table_kwarg", "table"))
    if table:
        return table
    params = request.query_params
    return next((params[p] for p in TABLE_PARAMS if params.get(p)), None)
