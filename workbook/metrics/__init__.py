"""Metrics from any verl log, live and after the fact, and why a run failed.

load_metrics(path)          a console log, a file-logger JSONL file or a run directory -> RunMetrics
LiveReader(path).poll()     steps of a growing run.log / metrics.jsonl / run directory
ChunkReader().feed(text)    steps of streamed output (Ray job log tails, a subprocess pipe)
diagnose(log, exit_code=)   Diagnosis: status, category, summary, evidence, last_step
reading_of(path)            metrics and diagnoser of a run directory or log, in one pass, kept
RunMetrics.origin           which of a run's sources (file logger, console, TensorBoard) named them
"""

from workbook.metrics.diagnosis import Diagnosis
from workbook.metrics.live import ChunkReader, LiveReader
from workbook.metrics.loading import load_metrics
from workbook.metrics.model import RunMetrics
from workbook.metrics.names import canonical_name
from workbook.metrics.reading import diagnose, reading_of

__all__ = [
    "ChunkReader",
    "Diagnosis",
    "LiveReader",
    "RunMetrics",
    "canonical_name",
    "diagnose",
    "load_metrics",
    "reading_of",
]
