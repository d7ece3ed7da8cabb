"""Structured logs for every component: one line per record, as JSON or as key=value pairs.

Log collectors (Loki, Elasticsearch, `kubectl logs | grep`) parse one record per line;
both formats carry the same fields (time in UTC, level, logger, message, and the
exception's traceback when there is one). `key=value` quotes values that need it, so
it stays machine-readable while a person can still read it.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal, TextIO

LogFormat = Literal["json", "text"]
LEVELS = ("debug", "info", "warning", "error")
FORMATS: tuple[LogFormat, ...] = ("text", "json")


def _fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict[str, str]:
    fields = {
        "time": datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    if record.exc_info:
        fields["error"] = formatter.formatException(record.exc_info)
    return fields


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record, self), ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_value(value)}" for key, value in _fields(record, self).items())


def _value(text: str) -> str:
    if text and not any(ch in text for ch in ' "=\n\t\\'):
        return text
    return json.dumps(text, ensure_ascii=False)


def setup_logging(
    *, level: str = "info", log_format: LogFormat = "text", stream: TextIO | None = None
) -> None:
    """Send every logger's records at `level` or above to `stream` (stderr) in `log_format`; replaces any setup."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if log_format == "json" else KeyValueFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # aiohttp logs every request at info; its access log stays off unless debugging
    logging.getLogger("aiohttp.access").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
