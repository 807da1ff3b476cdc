"""Alert rules on consumer lag and the firing/resolved transitions they record."""

from __future__ import annotations

from django.db import models


class LagAlertRule(models.Model):
    """A group glob, a condition (`status >= WARN`, `lag > N`, `time lag > S`,
    `no progress for D`) and how long it must hold (seconds), as monitoring.evaluation.alerts
    reads them. Validated by that module before it is stored."""

    name = models.CharField(max_length=200, unique=True)
    group_pattern = models.CharField(max_length=255)
    condition = models.CharField(max_length=200)
    duration_s = models.FloatField(default=0.0)
    webhook_url = models.URLField(max_length=1000, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class LagAlertEvent(models.Model):
    """One transition of a rule for one group. The latest event of a (rule, group) pair says
    whether it is firing now. The rule's name is kept so the history outlives the rule."""

    FIRING = "firing"
    RESOLVED = "resolved"

    rule = models.ForeignKey(LagAlertRule, null=True, on_delete=models.SET_NULL,
                             related_name="events")  # fmt: skip
    rule_name = models.CharField(max_length=200)
    group = models.CharField(max_length=255)
    state = models.CharField(max_length=10, choices=[(FIRING, FIRING), (RESOLVED, RESOLVED)])
    at_ms = models.BigIntegerField(help_text="evaluation time, epoch ms")
    value = models.FloatField(null=True, help_text="the measured value; null when unknown")
    detail = models.CharField(max_length=1000, blank=True, default="")
    delivery_error = models.CharField(max_length=1000, blank=True, default="",
                                      help_text="why the webhook POST failed, if it did")  # fmt: skip

    class Meta:
        ordering = ["-at_ms", "-id"]
        indexes = [models.Index(fields=["rule", "group", "-at_ms"])]

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "rule": self.rule_name,
            "group": self.group,
            "state": self.state,
            "atMs": self.at_ms,
            "value": self.value,
            "detail": self.detail,
            "deliveryError": self.delivery_error or None,
        }
