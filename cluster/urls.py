"""The controller's REST API at Pinot's paths (no trailing slashes, as Pinot)."""

from django.urls import path

from cluster.api import (
    application_quotas,
    audit,
    auth_info,
    cluster_info,
    instances,
    lineage,
    llc,
    periodic_tasks,
    realtime_ops,
    rebalance,
    running_queries,
    schemas,
    segments,
    sql,
    table_configs,
    table_views,
    tables,
    tenants,
    upload,
    upsert,
    zk,
)
from cluster.api.metrics import metrics
from cluster.api.tasks_urls import urlpatterns as task_urlpatterns

urlpatterns = [
    # schemas
    path("schemas", schemas.SchemaListView.as_view(), name="schemas"),
    path("schemas/validate", schemas.SchemaValidateView.as_view(), name="schema-validate"),
    path("schemas/<str:name>", schemas.SchemaDetailView.as_view(), name="schema"),
    # tables
    path("tables", tables.TableListView.as_view(), name="tables"),
    path("tables/validate", tables.TableValidateView.as_view(), name="table-validate"),
    path(
        "tables/forceCommitStatus/<str:job_id>",
        realtime_ops.ForceCommitStatusView.as_view(),
        name="force-commit-status",
    ),
    path("tables/<str:table>", tables.TableDetailView.as_view(), name="table"),
    path("tables/<str:table>/schema", tables.TableSchemaView.as_view(), name="table-schema"),
    path("tables/<str:table>/state", tables.TableStateView.as_view(), name="table-state"),
    path(
        "tables/<str:table>/instancePartitions",
        tables.InstancePartitionsView.as_view(),
        name="table-instance-partitions",
    ),
    path(
        "tables/<str:table>/idealstate",
        table_views.IdealStateView.as_view(),
        name="table-idealstate",
    ),
    path(
        "tables/<str:table>/externalview",
        table_views.ExternalViewView.as_view(),
        name="table-externalview",
    ),
    path("tables/<str:table>/size", table_views.TableSizeView.as_view(), name="table-size"),
    path(
        "tables/<str:table>/segmentsStatus",
        table_views.SegmentsStatusView.as_view(),
        name="table-segments-status",
    ),
    path(
        "tables/<str:table>/instances",
        table_views.TableInstancesView.as_view(),
        name="table-instances",
    ),
    path("tables/<str:table>/rebalance", rebalance.RebalanceView.as_view(), name="table-rebalance"),
    # real-time operations (PinotRealtimeTableResource)
    path(
        "tables/<str:table>/consumingSegmentsInfo",
        realtime_ops.ConsumingSegmentsInfoView.as_view(),
        name="table-consuming-segments-info",
    ),
    path(
        "tables/<str:table>/pauseConsumption",
        realtime_ops.PauseConsumptionView.as_view(),
        name="table-pause-consumption",
    ),
    path(
        "tables/<str:table>/resumeConsumption",
        realtime_ops.ResumeConsumptionView.as_view(),
        name="table-resume-consumption",
    ),
    path(
        "tables/<str:table>/pauseStatus",
        realtime_ops.PauseStatusView.as_view(),
        name="table-pause-status",
    ),
    path(
        "tables/<str:table>/forceCommit",
        realtime_ops.ForceCommitView.as_view(),
        name="table-force-commit",
    ),
    path(
        "tables/<str:table>/validDocIdsMetadata",
        upsert.ValidDocIdsMetadataView.as_view(),
        name="table-valid-doc-ids-metadata",
    ),
    path(
        "tables/<str:table>/upsertSummary",
        upsert.UpsertSummaryView.as_view(),
        name="table-upsert-summary",
    ),
    path("table/<str:table>/jobs", table_views.TableJobsView.as_view(), name="table-jobs"),
    path(
        "rebalanceStatus/<str:job_id>",
        rebalance.RebalanceStatusView.as_view(),
        name="rebalance-status",
    ),
    path("tableConfigs", table_configs.TableConfigsListView.as_view(), name="table-configs"),
    path(
        "tableConfigs/<str:table>",
        table_configs.TableConfigsDetailView.as_view(),
        name="table-config-set",
    ),
    # segments
    path("segments", upload.SegmentUploadView.as_view(), name="segment-upload"),
    path("v2/segments", upload.SegmentUploadView.as_view(), name="segment-upload-v2"),
    path(
        "segments/segmentReloadStatus/<str:job_id>",
        segments.ReloadStatusView.as_view(),
        name="segment-reload-status",
    ),
    path("segments/<str:table>", segments.SegmentListView.as_view(), name="segments"),
    path(
        "segments/<str:table>/servers",
        segments.SegmentServersView.as_view(),
        name="segment-servers",
    ),
    path(
        "segments/<str:table>/zkmetadata",
        segments.SegmentZkMetadataView.as_view(),
        name="segment-zkmetadata",
    ),
    path("segments/<str:table>/reload", segments.TableReloadView.as_view(), name="segments-reload"),
    path(
        "segments/<str:table>/needReload",
        segments.NeedReloadView.as_view(),
        name="segments-need-reload",
    ),
    path("segments/<str:table>/reset", segments.TableResetView.as_view(), name="segments-reset"),
    # segment lineage; before segments/<table>/<segment>, which would take these names
    path(
        "segments/<str:table>/startReplaceSegments",
        lineage.StartReplaceSegmentsView.as_view(),
        name="segments-start-replace",
    ),
    path(
        "segments/<str:table>/endReplaceSegments",
        lineage.EndReplaceSegmentsView.as_view(),
        name="segments-end-replace",
    ),
    path(
        "segments/<str:table>/revertReplaceSegments",
        lineage.RevertReplaceSegmentsView.as_view(),
        name="segments-revert-replace",
    ),
    path("segments/<str:table>/lineage", lineage.SegmentLineageView.as_view(), name="lineage"),
    path(
        "segments/<str:table>/<str:segment>", segments.SegmentDetailView.as_view(), name="segment"
    ),
    path(
        "segments/<str:table>/<str:segment>/metadata",
        segments.SegmentMetadataView.as_view(),
        name="segment-metadata",
    ),
    path(
        "segments/<str:table>/<str:segment>/reload",
        segments.SegmentReloadView.as_view(),
        name="segment-reload",
    ),
    path(
        "segments/<str:table>/<str:segment>/reset",
        segments.SegmentResetView.as_view(),
        name="segment-reset",
    ),
    # tenants and instances
    path("tenants", tenants.TenantListView.as_view(), name="tenants"),
    path("tenants/<str:name>", tenants.TenantDetailView.as_view(), name="tenant"),
    path("tenants/<str:name>/tables", tenants.TenantTablesView.as_view(), name="tenant-tables"),
    path("instances", instances.InstanceListView.as_view(), name="instances"),
    path("instances/<str:instance>", instances.InstanceDetailView.as_view(), name="instance"),
    path(
        "instances/<str:instance>/updateTags",
        instances.InstanceTagsView.as_view(),
        name="instance-tags",
    ),
    path(
        "instances/<str:instance>/state",
        instances.InstanceStateView.as_view(),
        name="instance-state",
    ),
    # cluster, ZooKeeper, periodic tasks, query
    path("cluster/info", cluster_info.ClusterInfoView.as_view(), name="cluster-info"),
    path("cluster/configs", cluster_info.ClusterConfigsView.as_view(), name="cluster-configs"),
    path(
        "cluster/configs/<str:key>",
        cluster_info.ClusterConfigDeleteView.as_view(),
        name="cluster-config",
    ),
    path("zk/ls", zk.ZkLsView.as_view(), name="zk-ls"),
    path("zk/lsl", zk.ZkLslView.as_view(), name="zk-lsl"),
    path("zk/get", zk.ZkGetView.as_view(), name="zk-get"),
    path("zk/stat", zk.ZkStatView.as_view(), name="zk-stat"),
    path("zk/put", zk.ZkPutView.as_view(), name="zk-put"),
    path("zk/delete", zk.ZkDeleteView.as_view(), name="zk-delete"),
    path(
        "periodictask/names",
        periodic_tasks.PeriodicTaskNamesView.as_view(),
        name="periodictask-names",
    ),
    path("periodictask/run", periodic_tasks.PeriodicTaskRunView.as_view(), name="periodictask-run"),
    path(
        "periodictask/status",
        periodic_tasks.PeriodicTaskStatusView.as_view(),
        name="periodictask-status",
    ),
    path(
        "periodictask/SegmentStatusChecker/report",
        periodic_tasks.SegmentStatusReportView.as_view(),
        name="segment-status-report",
    ),
    path("sql", sql.SqlView.as_view(), name="sql"),
    # running queries on the brokers, and their cancellation
    path("queries", running_queries.RunningQueriesView.as_view(), name="running-queries"),
    path(
        "query/<str:broker_id>/<str:query_id>",
        running_queries.CancelQueryView.as_view(),
        name="cancel-query",
    ),
    path(
        "clientQuery/<str:client_query_id>",
        running_queries.CancelClientQueryView.as_view(),
        name="cancel-client-query",
    ),
    path("auth/info", auth_info.AuthInfoView.as_view(), name="auth-info"),
    path(
        "applicationQuotas",
        application_quotas.ApplicationQuotasView.as_view(),
        name="application-quotas",
    ),
    path(
        "applicationQuotas/<str:app>",
        application_quotas.ApplicationQuotaView.as_view(),
        name="application-quota",
    ),
    path("auth/verify", auth_info.AuthVerifyView.as_view(), name="auth-verify"),
    path("metrics", metrics, name="metrics"),
    path("audit", audit.AuditView.as_view(), name="audit"),
    path(
        "tables/<str:table>/rebuildBrokerResourceFromHelixTags",
        tables.RebuildBrokerResourceView.as_view(),
        name="table-rebuild-broker-resource",
    ),
]
urlpatterns += task_urlpatterns
# the segment completion protocol (servers call the lead controller)
urlpatterns += [
    path("segmentConsumed", llc.SegmentConsumedView.as_view(), name="segment-consumed"),
    path("segmentCommitStart", llc.SegmentCommitStartView.as_view(), name="segment-commit-start"),
    path("segmentUpload", llc.SegmentUploadView.as_view(), name="segment-upload-llc"),
    path(
        "segmentCommitEndWithMetadata",
        llc.SegmentCommitEndView.as_view(),
        name="segment-commit-end-with-metadata",
    ),
    path(
        "segmentStoppedConsuming",
        llc.SegmentStoppedConsumingView.as_view(),
        name="segment-stopped-consuming",
    ),
    path("extendBuildTime", llc.ExtendBuildTimeView.as_view(), name="extend-build-time"),
]
