"""Input discovery and output layout, as Pinot's segment generation runners do them.

- `FilePattern` is Java's `PathMatcher` syntax that Pinot uses: `glob:**/*.avro`, `regex:...`.
  A file matches when the pattern matches its path relative to the input directory (so
  `glob:*.avro` means "directly under inputDirURI", as Pinot documents) or its absolute path (so
  `glob:**/*.avro` also matches files directly under the input directory, as in Pinot).
- `list_input_files` gives each matched file its sequence id: by default the index of the file
  among its sorted siblings in the same directory, or its global index when the naming config
  sets `use.global.directory.sequence.id`.
- `segment_output_dir` mirrors the input file's sub-directory under the output directory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from spark_jobs.ingestion.errors import InputError, SpecError


def local_path(uri: str, root: Path | None = None, what: str = "path") -> Path:
    """The local path of a `file:` URI or plain path; a relative path is taken from `root`
    (default: the working directory). Other URI schemes are not supported."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise SpecError(f"{what} {uri!r}: file URIs on another host are not supported")
        path = Path(unquote(parsed.path))
    elif parsed.scheme and len(parsed.scheme) > 1:  # a one-letter "scheme" is a Windows drive
        raise SpecError(
            f"{what} {uri!r}: URI scheme '{parsed.scheme}' is not supported here; "
            f"use a local path or a file:// URI"
        )
    else:
        path = Path(uri)
    if not path.is_absolute():
        path = (root or Path.cwd()) / path
    return Path(os.path.normpath(path))


def glob_to_regex(glob: str) -> str:
    """Translate Java's glob syntax (`*`, `**`, `?`, `[..]`, `[!..]`, `{a,b}`, `\\x`) to a regex
    that must match the whole path."""
    out: list[str] = []
    i, n, in_group = 0, len(glob), False
    while i < n:
        c = glob[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if c == "*":
            if glob.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                raise SpecError(f"glob {glob!r}: unclosed '['")
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        elif c == "{" and not in_group:
            out.append("(?:")
            in_group = True
        elif c == "}" and in_group:
            out.append(")")
            in_group = False
        elif c == "," and in_group:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if in_group:
        raise SpecError(f"glob {glob!r}: unclosed '{{'")
    return "".join(out)


@dataclass(frozen=True)
class FilePattern:
    """A Pinot file name pattern (`glob:` or `regex:` syntax; a bare pattern is a glob)."""

    text: str
    regex: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> FilePattern:
        syntax, sep, body = text.partition(":")
        if sep and syntax.lower() == "regex":
            try:
                return cls(text, re.compile(body))
            except re.error as exc:
                raise SpecError(f"file name pattern {text!r}: invalid regex: {exc}") from exc
        if not (sep and syntax.lower() == "glob"):
            body = text
        return cls(text, re.compile(glob_to_regex(body)))

    def matches(self, relative: str, absolute: str) -> bool:
        return bool(self.regex.fullmatch(relative) or self.regex.fullmatch(absolute))


@dataclass(frozen=True)
class InputFile:
    """A matched input file: `path` is absolute; `relative` is relative to the input directory,
    with '/' separators; `sequence_id` is what Pinot's naming uses for it."""

    path: str
    relative: str
    sequence_id: int

    @property
    def uri(self) -> str:
        return Path(self.path).as_uri()


def list_input_files(
    input_dir: Path,
    include: str | None = None,
    exclude: str | None = None,
    recursive: bool = True,
    global_sequence_id: bool = False,
) -> list[InputFile]:
    """The files under `input_dir` that match `include` and not `exclude`, sorted by path.

    Raises InputError when the directory does not exist or nothing matches.
    """
    if not input_dir.is_dir():
        raise InputError(f"input directory {str(input_dir)!r} does not exist")
    include_pattern = FilePattern.parse(include) if include else None
    exclude_pattern = FilePattern.parse(exclude) if exclude else None
    candidates = input_dir.rglob("*") if recursive else input_dir.iterdir()
    matched: list[tuple[str, str]] = []
    for path in candidates:
        if not path.is_file():
            continue
        relative, absolute = path.relative_to(input_dir).as_posix(), path.as_posix()
        if include_pattern and not include_pattern.matches(relative, absolute):
            continue
        if exclude_pattern and exclude_pattern.matches(relative, absolute):
            continue
        matched.append((absolute, relative))
    if not matched:
        raise InputError(
            f"no input file in {str(input_dir)!r} matches includeFileNamePattern "
            f"{include!r} and excludeFileNamePattern {exclude!r}"
            + ("" if recursive else " (searchRecursively is false)")
        )
    matched.sort()
    if global_sequence_id:
        return [InputFile(a, r, i) for i, (a, r) in enumerate(matched)]
    files, index_in_dir = [], {}
    for absolute, relative in matched:
        parent = os.path.dirname(absolute)
        index_in_dir[parent] = index_in_dir.get(parent, -1) + 1
        files.append(InputFile(absolute, relative, index_in_dir[parent]))
    return files


def segment_output_dir(output_dir: Path, input_file: InputFile) -> Path:
    """Where the segment built from `input_file` goes: the file's sub-directory (relative to the
    input directory, whitespace replaced by '_') under `output_dir`."""
    parent = os.path.dirname(input_file.relative)
    return output_dir / re.sub(r"\s+", "_", parent) if parent else output_dir


def list_segment_tars(output_dir: Path, pattern: str | None = None) -> list[Path]:
    """Segment tar files (`*.tar.gz`, not Pinot's `*.metadata.tar.gz`) under `output_dir`,
    optionally filtered by pushJobSpec.pushFileNamePattern; sorted by path."""
    if not output_dir.is_dir():
        raise InputError(f"segment directory {str(output_dir)!r} does not exist")
    push_pattern = FilePattern.parse(pattern) if pattern else None
    tars = []
    for path in sorted(output_dir.rglob("*.tar.gz")):
        if not path.is_file() or path.name.endswith(".metadata.tar.gz"):
            continue
        relative = path.relative_to(output_dir).as_posix()
        if push_pattern and not push_pattern.matches(relative, path.as_posix()):
            continue
        tars.append(path)
    if not tars:
        raise InputError(f"no segment tar (*.tar.gz) to push in {str(output_dir)!r}")
    return tars
