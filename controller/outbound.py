"""The controller's outbound policy (``engine.runtime.outbound``) from its settings:
SPRIG_OUTBOUND_ALLOWED_HOSTS and SPRIG_OUTBOUND_ALLOW_PRIVATE, read by Django's settings."""

from __future__ import annotations

from django.conf import settings

from engine.runtime.outbound import OutboundPolicy


def outbound_policy() -> OutboundPolicy:
    return OutboundPolicy(tuple(settings.OUTBOUND_ALLOWED_HOSTS), settings.OUTBOUND_ALLOW_PRIVATE)
