"""Types and errors shared by every layer of the engine."""
