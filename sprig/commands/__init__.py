"""One module per CLI verb; see sprig.cli."""
