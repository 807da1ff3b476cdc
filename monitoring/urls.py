"""Consumer-lag REST paths, at the root next to the controller's own API."""

from django.urls import path

from monitoring.api import alerts, burrow, groups

urlpatterns = [
    path("consumerGroups", groups.ConsumerGroupsView.as_view()),
    # Kafka allows '/' in a group id: <path:>, and the longer route first
    path("consumerGroups/<path:group>/lagHistory", groups.ConsumerGroupLagHistoryView.as_view()),
    path("consumerGroups/<path:group>", groups.ConsumerGroupView.as_view()),
    path("consumerLagAlerts/rules", alerts.AlertRulesView.as_view()),
    path("consumerLagAlerts/rules/<str:name>", alerts.AlertRuleView.as_view()),
    path("consumerLagAlerts/events", alerts.AlertEventsView.as_view()),
    # Burrow's HTTP API v3 (a group id may hold '/': <path:>, the suffix matched last)
    path("v3/kafka", burrow.BurrowClustersView.as_view()),
    path("v3/kafka/<str:cluster>/consumer", burrow.BurrowConsumersView.as_view()),
    path("v3/kafka/<str:cluster>/consumer/<path:group>/status", burrow.BurrowStatusView.as_view()),
    path("v3/kafka/<str:cluster>/consumer/<path:group>/lag", burrow.BurrowLagView.as_view()),
]
