"""Java date-time patterns (``yyyy-MM-dd'T'HH:mm:ss.SSSZ``): the one place they are read.

Pinot reads these patterns with Joda-Time's ``DateTimeFormat.forPattern(p).withZoneUTC()``
(``DateTimePatternHandler``) for ``toDateTime`` / ``fromDateTime``, DATETIMECONVERT and the
``SIMPLE_DATE_FORMAT`` date-time field format. This module follows Joda's rules:

- a run of one letter is one field; the run length is the minimum number of digits printed
  (``d`` prints ``5``, ``dd`` prints ``05``), ``yy`` is the two-digit year, ``MMM``/``MMMM``
  and ``E``/``EEEE`` are short/full English names, ``S`` runs are the fraction of a second
  to that many digits (``SSS`` = milliseconds);
- text in single quotes is literal (``'T'``), ``''`` is a quote;
- any other letter is an error that names the letter and the pattern, as Joda's "Illegal
  pattern component" is.

Everything is vectorised: formatting builds one Arrow string column per field and joins
them; parsing reads fixed-width text (``2021-07-21 06:00:00``) straight from its bytes and
anything else with one regular expression per pattern, then computes epoch milliseconds
from the fields with integer arithmetic.
"""

from engine.spi.datetime_pattern.formatting import format_java_datetime
from engine.spi.datetime_pattern.parsing import parse_java_datetime
from engine.spi.datetime_pattern.syntax import (
    DateTimeParseError,
    Field,
    InvalidPatternError,
    check_pattern,
    check_timezone,
    compile_pattern,
    is_utc,
)

__all__ = [
    "DateTimeParseError",
    "Field",
    "InvalidPatternError",
    "check_pattern",
    "check_timezone",
    "compile_pattern",
    "format_java_datetime",
    "is_utc",
    "parse_java_datetime",
]
