"""Reading input records and shaping them to a schema (transforms, filter, coercion)."""
