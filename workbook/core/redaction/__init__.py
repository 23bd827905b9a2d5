"""Secrets never leave the run directory: one guard, by name and by shape, on every write.

Everything the workbook derives or renders from a run (``run.json``, ``checks.json``, JUnit XML,
notebook outputs, ``params.resolved.yaml``, the HTML, the index, the published tree) passes
through here; the run's raw ``run.log`` and verl's own ``metrics.jsonl`` stay as they were.

- :mod:`.text`: the rules on text, line by line (:func:`redact_text`, :class:`LineRedactor`,
  :func:`is_secret_name`);
- :mod:`.structure`: JSON, YAML, notebooks and XML redacted inside their structure, so they stay
  valid and their numbers exact (:func:`redact_mapping`, :func:`dump_json`);
- :mod:`.files`: a redacted copy of any file by its form (:func:`redact_file`).
"""

from workbook.core.redaction.files import form_of, redact_document, redact_file, redact_opened
from workbook.core.redaction.structure import (
    dump_json,
    redact_json_line,
    redact_json_text,
    redact_mapping,
    redact_notebook_data,
    redact_notebook_text,
    redact_xml_element,
    redact_xml_text,
    redact_yaml_text,
)
from workbook.core.redaction.text import REDACTED, LineRedactor, is_secret_name, redact_text

__all__ = [
    "REDACTED", "LineRedactor", "dump_json", "form_of", "is_secret_name", "redact_document",
    "redact_file", "redact_json_line", "redact_opened", "redact_json_text", "redact_mapping",
    "redact_notebook_data", "redact_notebook_text", "redact_text", "redact_xml_element",
    "redact_xml_text", "redact_yaml_text",
]  # fmt: skip
