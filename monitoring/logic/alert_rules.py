"""Alert rules: create (validated by monitoring.evaluation.alerts), list, delete, and the
periodic evaluation that records firing/resolved transitions and POSTs them to a webhook.

A webhook is an http(s) URL whose host resolves to public addresses only (or is allowed by
SPRIG_OUTBOUND_ALLOWED_HOSTS; engine.runtime.outbound), checked when the rule is created and
again at each delivery, which connects to the address it checked then."""

from __future__ import annotations

import logging

import urllib3
from django.conf import settings
from django.db import transaction

from controller.errors import BadRequest, Conflict, NotFound
from engine.common.clock import now_ms
from engine.runtime.outbound import OutboundPolicy, OutboundRefused, Target, post_json
from monitoring.errors import RuleError
from monitoring.evaluation.alerts import AlertEvent, AlertRule, evaluate_rule
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.logic import lag_source
from monitoring.logic.lag_source import stored_samples
from monitoring.models import LagAlertEvent, LagAlertRule

log = logging.getLogger(__name__)
WEBHOOK_TIMEOUT_S = 5.0


def rule_json(rule: LagAlertRule) -> dict:
    return {
        "name": rule.name,
        "groupPattern": rule.group_pattern,
        "condition": rule.condition,
        "durationSeconds": rule.duration_s,
        "webhookUrl": rule.webhook_url or None,
        "firingGroups": sorted(firing_groups(rule)),
    }


def parsed(rule: LagAlertRule) -> AlertRule:
    return AlertRule.parse(rule.name, rule.group_pattern, rule.condition, rule.duration_s)


def webhook_target(url: str) -> Target:
    """Where to POST for ``url``; OutboundRefused naming the setting that would allow it."""
    policy = OutboundPolicy(tuple(settings.OUTBOUND_ALLOWED_HOSTS),
                            settings.OUTBOUND_ALLOW_PRIVATE)  # fmt: skip
    return policy.target(url, "webhookUrl")


def create_rule(name: str, group_pattern: str, condition: str, duration: str | float,
                webhook_url: str = "") -> LagAlertRule:  # fmt: skip
    """400 naming what cannot be read or a webhook that may not be called; 409 when the name
    is taken."""
    try:
        checked = AlertRule.parse(name, group_pattern, condition, duration)
    except RuleError as exc:
        raise BadRequest(str(exc)) from exc
    if webhook_url:
        try:
            webhook_target(webhook_url)
        except OutboundRefused as exc:
            raise BadRequest(str(exc)) from None
    if LagAlertRule.objects.filter(name=name).exists():
        raise Conflict(f"alert rule '{name}' already exists")
    return LagAlertRule.objects.create(
        name=name, group_pattern=group_pattern, condition=condition,
        duration_s=checked.duration_s, webhook_url=webhook_url,
    )  # fmt: skip


def delete_rule(name: str) -> None:
    deleted, _ = LagAlertRule.objects.filter(name=name).delete()
    if not deleted:
        raise NotFound(f"alert rule '{name}' does not exist")


def firing_groups(rule: LagAlertRule) -> set[str]:
    """Groups whose latest event for the rule is `firing`."""
    latest: dict[str, str] = {}
    for group, state in rule.events.order_by("at_ms", "id").values_list("group", "state"):
        latest[group] = state
    return {group for group, state in latest.items() if state == LagAlertEvent.FIRING}


def evaluate_all(reader: KafkaGroupReader | None = None, at_ms: int | None = None) -> dict:
    """One pass over every rule and every group it matches (the groups Kafka lists now, plus
    those still firing, so a group that went away resolves). Returns {rule: [transitions]}.
    Kafka is only asked when there is a rule (the default reader needs the lag table)."""
    at_ms = now_ms() if at_ms is None else at_ms
    rules = list(LagAlertRule.objects.all())
    if not rules:
        return {}
    reader = reader or lag_source.reader()
    listed = [listing.group_id for listing in reader.list_groups()]
    report: dict[str, list[str]] = {}
    samples_of: dict[str, dict] = {}  # one history query per group, however many rules match
    for rule in rules:
        checked = parsed(rule)
        firing = firing_groups(rule)
        for group in sorted({g for g in listed if checked.matches(g)} | firing):
            if group not in samples_of:
                samples_of[group] = stored_samples(group, at_ms)
            event = evaluate_rule(checked, group, samples_of[group], at_ms, group in firing)
            if event is not None:
                record(rule, event)
                report.setdefault(rule.name, []).append(f"{group} {event.state}")
    return report


def record(rule: LagAlertRule, event: AlertEvent) -> LagAlertEvent:
    with transaction.atomic():
        stored = LagAlertEvent.objects.create(
            rule=rule, rule_name=rule.name, group=event.group, state=event.state,
            at_ms=event.at_ms, value=event.value, detail=event.detail[:1000],
        )  # fmt: skip
    if rule.webhook_url:
        stored.delivery_error = deliver(rule.webhook_url, stored.to_json())
        if stored.delivery_error:
            stored.save(update_fields=["delivery_error"])
    return stored


def deliver(url: str, payload: dict) -> str:
    """POSTs the event as JSON; the failure text ('' when delivered). A webhook that is down
    or no longer allowed must not stop the other rules, so the failure is kept on the event
    and logged. A redirect is a failure: it is not followed."""
    try:
        status = post_json(webhook_target(url), payload, WEBHOOK_TIMEOUT_S)
    except OutboundRefused as exc:
        log.warning("lag alert webhook %s refused: %s", url, exc)
        return f"POST {url} refused: {exc}"[:1000]
    except urllib3.exceptions.HTTPError as exc:
        log.warning("lag alert webhook %s failed: %s", url, exc)
        return f"POST {url} failed: {exc}"[:1000]
    if status >= 300:
        log.warning("lag alert webhook %s answered %s", url, status)
        return f"POST {url} answered HTTP {status}"
    return ""
