"""Sprig's command line and the local service stack that backs the quickstart and the tests."""
