"""There is one scalar-function registry and one Java date-time pattern reader, and both
ingestion and the query engine use them."""

from __future__ import annotations

import ast
import pathlib

import engine.functions
import engine.functions.datetime
import engine.ingest.expression
import engine.query.evaluate
import engine.query.functions
import engine.spi.datetime_format
import engine.spi.datetime_pattern

ENGINE = pathlib.Path(engine.functions.__file__).parent.parent


def test_ingestion_and_queries_look_functions_up_in_the_same_registry():
    assert engine.ingest.expression.lookup is engine.functions.lookup
    assert engine.query.functions.lookup is engine.functions.lookup
    assert engine.query.evaluate.functions is engine.query.functions
    for name in ("toEpochDays", "to_epoch_days", "TOEPOCHDAYS"):
        assert engine.query.functions.check_call(name, 1) is engine.functions.lookup(name)


def test_field_formats_and_functions_read_patterns_in_the_same_module():
    pattern = engine.spi.datetime_pattern
    for module in (engine.spi.datetime_format, engine.functions.datetime):
        assert module.parse_java_datetime is pattern.parse_java_datetime
        assert module.format_java_datetime is pattern.format_java_datetime


def _modules(root: pathlib.Path):
    for path in sorted(root.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def test_no_second_pattern_table_or_function_registry():
    """A second copy would need a table of Java pattern letters or of function names."""
    assert _copies(ENGINE) == []


def _copies(root: pathlib.Path) -> list[str]:
    offenders = []
    for path, tree in _modules(root):
        relative = path.relative_to(root.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
                strings = {
                    c.value
                    for c in ast.walk(node)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
                if {"yyyy", "MM"} <= strings or {"yy", "dd"} <= strings:
                    offenders.append(f"{relative}:{node.lineno} Java pattern letters")
            called = getattr(node, "func", None)
            if getattr(called, "id", None) == "register" and not relative.startswith(
                "engine/functions/"
            ):
                offenders.append(f"{relative}:{node.lineno} registers a scalar function")
    return sorted(set(offenders))


def test_the_guard_finds_the_copies_this_replaced(tmp_path):
    old = tmp_path / "engine"
    old.mkdir()
    (old / "ingest_functions.py").write_text(
        '@register("upper")\ndef upper(v): ...\n_TOKENS = [("yyyy", "%Y"), ("MM", "%m")]\n'
    )
    assert _copies(old) == [
        "engine/ingest_functions.py:1 registers a scalar function",
        "engine/ingest_functions.py:3 Java pattern letters",
    ]
