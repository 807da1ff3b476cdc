"""The controller's record of what the operator asked for. ZooKeeper holds the published copy
(see engine.clusterstate); the reconcile task re-publishes these rows and reports drift."""

from __future__ import annotations

from django.db import models


class TableType(models.TextChoices):
    OFFLINE = "OFFLINE"
    REALTIME = "REALTIME"


class TenantRole(models.TextChoices):
    SERVER = "SERVER"
    BROKER = "BROKER"


class Schema(models.Model):
    name = models.CharField(max_length=255, unique=True)
    config = models.JSONField(help_text="the Pinot schema JSON as given")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TableConfig(models.Model):
    """One table type; a hybrid table has an OFFLINE and a REALTIME row."""

    table_name = models.CharField(max_length=255, help_text="raw name, without _OFFLINE")
    table_type = models.CharField(max_length=8, choices=TableType.choices)
    config = models.JSONField(help_text="the Pinot table config JSON as given")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["table_name", "table_type"]
        constraints = [
            models.UniqueConstraint(fields=["table_name", "table_type"], name="unique_table_type")
        ]

    @property
    def name_with_type(self) -> str:
        return f"{self.table_name}_{self.table_type}"

    def __str__(self) -> str:
        return self.name_with_type


class Tenant(models.Model):
    name = models.CharField(max_length=255)
    role = models.CharField(max_length=8, choices=TenantRole.choices)
    number_of_instances = models.PositiveIntegerField(default=0)
    offline_instances = models.PositiveIntegerField(default=0)
    realtime_instances = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "role"]
        constraints = [models.UniqueConstraint(fields=["name", "role"], name="unique_tenant_role")]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class AuditEvent(models.Model):
    """Who changed what, newest last: one row per successful write through the API."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=64, help_text="e.g. table.create, segment.upload")
    resource_type = models.CharField(max_length=32)
    resource_name = models.CharField(max_length=512)
    detail = models.JSONField(default=dict)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.resource_name}"
