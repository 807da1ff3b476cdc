from django.contrib import admin

from cluster import models


@admin.register(models.Schema)
class SchemaAdmin(admin.ModelAdmin):
    list_display = ["name", "updated_at"]
    search_fields = ["name"]


@admin.register(models.TableConfig)
class TableConfigAdmin(admin.ModelAdmin):
    list_display = ["table_name", "table_type", "updated_at"]
    list_filter = ["table_type"]
    search_fields = ["table_name"]


@admin.register(models.Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["name", "role", "number_of_instances"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "resource_type", "resource_name"]
    list_filter = ["action", "resource_type"]
    search_fields = ["resource_name"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # the history is append-only
