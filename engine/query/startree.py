"""Star-tree execution (filled in once the segment layer exposes star-tree readers)."""

from __future__ import annotations


def star_tree_for(plan, view):
    return None


def execute_star_tree(plan, view, result):
    return None
