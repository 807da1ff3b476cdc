"""Star-tree indexes: pre-aggregated records over a tree of dimension values."""
