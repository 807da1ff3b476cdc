"""The server's part of the multi-stage engine: it hosts a ``StageRunner`` on its query
port and reads leaf stages from its own segments with the single-stage engine::

    POST /multistage/submit                 the query's stages with this server's workers
    POST /multistage/mailbox?requestId=&stage=&worker=&sender=&end=   rows for a worker
    POST /multistage/cancel?requestId=      stop a query's workers here
"""

from __future__ import annotations

import orjson
import pyarrow as pa

from engine.multistage.leaf import filter_plan, scan
from engine.multistage.leaf_aggregate import states
from engine.multistage.runner import StageRunner
from engine.query.errors import QueryError
from engine.query.intermediate import merge_stats
from engine.query.runner import QueryEngine, columns_from_segments
from engine.runtime import Request, Response, SchemaCache
from engine.runtime.http_limits import MAX_BODY_BYTES
from engine.server.segments import SegmentDataManager

SEGMENTS_MISSING_ERROR_CODE = 235


def _null_option(options: dict) -> dict:
    return {"enableNullHandling": str(options.get("enableNullHandling", "false"))}


class MultiStageService:
    def __init__(self, instance_id: str, address: str, segments: SegmentDataManager,
                 schemas: SchemaCache, engine: QueryEngine) -> None:  # fmt: skip
        self.segments = segments
        self.schemas = schemas
        self.engine = engine
        self.runner = StageRunner(instance_id, address, self.read_leaf)

    def routes(self, router) -> None:
        # a stage's rows come in messages of up to 16 MB; a submit names every segment
        router.add("POST", "/multistage/submit", self._submit, max_body_bytes=MAX_BODY_BYTES)
        router.add("POST", "/multistage/mailbox", self._mailbox, max_body_bytes=MAX_BODY_BYTES)
        router.add("POST", "/multistage/cancel", self._cancel)

    def read_leaf(self, leaf, segments_by_table: dict[str, list[str]], deadline: float,
                  options: dict) -> tuple[pa.Table, dict]:  # fmt: skip
        """The leaf's rows on this server: every table half it was given segments of."""
        parts, stats = [], []
        for table, names in sorted(segments_by_table.items()):
            if not table.startswith(leaf.table + "_"):
                continue
            found, missing = self.segments.online_segments(table, names)
            if missing:
                raise QueryError(
                    f"{len(missing)} segment(s) of {table} are not served here: "
                    + ", ".join(missing[:10])
                )
            schema = self.schemas.get(leaf.table) or (columns_from_segments(found) if found
                                                      else None)  # fmt: skip
            if leaf.aggregate_sql is not None:
                sql = leaf.aggregate_sql.replace(f'"{leaf.table}"', f'"{table}"', 1)
                plan = self.engine.compile(sql, schema, _null_option(options))
                parts.append(states(plan, self._execute, found))
                continue
            plan = filter_plan(self.engine.compile, table, leaf.columns, leaf.filter, schema,
                               options)  # fmt: skip
            rows, counters = scan(plan, found, leaf.columns, leaf.schema, self.engine.decoded,
                                  deadline, frozenset(leaf.default_valued))  # fmt: skip
            parts.append(rows)
            stats.append(counters)
        table = pa.concat_tables(parts) if parts else leaf.schema.empty_table()
        return table, merge_stats(stats) if stats else {}

    def _execute(self, plan, segments):
        return self.engine.execute_server(plan, segments, parallel=False)

    def _submit(self, request: Request) -> Response:
        try:
            answer = self.runner.submit(request.body)
        except (KeyError, ValueError, TypeError, orjson.JSONDecodeError) as exc:
            return Response.json({"errorCode": 200, "message": f"bad stage request: {exc}"}, 400)
        return Response.json(answer)

    def _mailbox(self, request: Request) -> Response:
        try:
            self.runner.mailbox(request.query, request.body)
        except (ValueError, orjson.JSONDecodeError) as exc:
            return Response.error(400, str(exc))
        return Response.text("OK")

    def _cancel(self, request: Request) -> Response:
        try:
            self.runner.cancel(int(request.query.get("requestId", "")))
        except ValueError:
            return Response.error(400, "requestId must be a number")
        return Response.text("OK")
