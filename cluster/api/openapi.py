"""OpenAPI shapes that DRF serializers do not express by themselves: lists of names and JSON
objects keyed by name. A ``{name: value}`` map is a component (``map_of``) whose values refer
to their serializer's component, which drf-spectacular then registers: a hand-written
``$ref`` would dangle whenever no other endpoint happened to use that serializer."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import build_array_type, build_basic_type, build_object_type
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers

STRING_LIST = build_array_type(build_basic_type(OpenApiTypes.STR))


def string_map(description: str) -> dict:
    """The schema of a ``{name: string}`` map (e.g. task name to TaskState)."""
    schema = build_object_type(additionalProperties=build_basic_type(OpenApiTypes.STR))
    return {**schema, "description": description}


class MapSerializer(serializers.Serializer):
    """Documents a ``{name: <value>}`` JSON object (see ``map_of``); the views answer plain
    dicts and never serialize through it."""

    value: type[serializers.Serializer]
    description = ""


def map_of(value: type[serializers.Serializer], component: str, description: str) -> type:
    """The component ``component``: a JSON object whose values are ``value`` (a serializer,
    possibly another map). Define each map once: two with one name would collide."""
    return type(component, (MapSerializer,), {"value": value, "description": description})


class MapSchema(OpenApiSerializerExtension):
    target_class = MapSerializer
    match_subclasses = True

    def get_name(self, auto_schema, direction) -> str:
        return type(self.target).__name__

    def map_serializer(self, auto_schema, direction) -> dict:
        value = auto_schema.resolve_serializer(self.target.value, direction)
        return build_object_type(
            additionalProperties=value.ref, description=self.target.description
        )
