"""Cross-origin protection for every state-changing request, with auth on or off.

DRF's views skip Django's CSRF check unless a user is logged in, so with auth off a page on
any site could make a visitor's browser POST to the controller (a form or a ``fetch`` with a
"simple" content type needs no preflight). This refuses such requests by what browsers say
about them, as Go's ``http.CrossOriginProtection`` does: ``Sec-Fetch-Site`` when present,
else ``Origin`` compared with the request's host. A request with neither comes from no
browser (curl, engine processes, minions) and passes. Origins listed in
``CSRF_TRUSTED_ORIGINS`` (``SPRIG_TRUSTED_ORIGINS``: a console behind a proxy) also pass.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

_SAFE_METHODS = {"GET", "HEAD", "OPTIONS", "TRACE"}
_SAME_SITE_FETCH = {"same-origin", "none"}  # "none": typed in the address bar, a bookmark


def cross_origin_refusal(request: HttpRequest) -> str | None:
    """Why ``request`` is refused as cross-origin, or None when it may proceed."""
    if request.method in _SAFE_METHODS:
        return None
    origin = request.headers.get("Origin")
    if origin and origin in settings.CSRF_TRUSTED_ORIGINS:
        return None
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None:
        if fetch_site in _SAME_SITE_FETCH:
            return None
        return f"a {fetch_site} request (Sec-Fetch-Site) from {origin or 'an unnamed origin'}"
    if origin is None:
        return None  # not from a browser
    parsed = urlsplit(origin)
    if parsed.scheme in ("http", "https") and parsed.netloc == request.get_host():
        return None
    return f"a request from {origin}, which is not this controller's origin"


class CrossOriginProtectionMiddleware:
    """403 for a state-changing request a browser sent from another site."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        why = cross_origin_refusal(request)
        if why is None:
            return self.get_response(request)
        return JsonResponse(
            {"code": 403, "error": f"Cross-origin {request.method} refused: {why}. A console "
             "served from another origin (a proxy) must be listed in SPRIG_TRUSTED_ORIGINS"},
            status=403,
        )  # fmt: skip
