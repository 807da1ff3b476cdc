"""PySpark jobs: pure DataFrame -> DataFrame transforms plus a thin `main(argv)` each."""
