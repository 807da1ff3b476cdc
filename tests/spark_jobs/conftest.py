"""Fixtures for the Spark job tests.

Spark starts its Python workers with $PYSPARK_PYTHON (default: `python3` on PATH, which may
not have the project's dependencies); point it at this interpreter before any test creates
the session-wide SparkSession.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
