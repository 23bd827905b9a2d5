"""JUnit XML for CI systems: one test case per check row, failures and errors counted apart."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbook.checks.verdict import Verdict


def junit_xml(verdict: "Verdict", suite: str = "workbook.checks") -> str:
    """Render ``verdict`` as a JUnit ``<testsuites>`` document (UTF-8 text)."""
    counts = {"tests": str(len(verdict.rows)), "failures": str(verdict.count("fail")),
              "errors": str(verdict.count("error")), "skipped": "0"}
    root = ET.Element("testsuites", name="workbook", **counts)
    node = ET.SubElement(root, "testsuite", name=suite, **counts)
    props = ET.SubElement(node, "properties")
    for key, value in (("verdict", verdict.status), ("reason", verdict.reason),
                       ("last_step", verdict.last_step), ("required_step", verdict.required_step)):
        ET.SubElement(props, "property", name=key, value="" if value is None else str(value))
    for row in verdict.rows:
        case = ET.SubElement(node, "testcase", classname=f"{suite}.{row.kind}", name=row.name)
        detail = f"value: {row.value}\nexpected: {row.expected}\n{row.message}".strip()
        if row.status == "fail":
            ET.SubElement(case, "failure", message=row.message or "check failed",
                          type=row.kind).text = detail
        elif row.status == "error":
            ET.SubElement(case, "error", message=row.message or "could not be computed",
                          type=row.kind).text = detail
    ET.SubElement(node, "system-out").text = f"verdict: {verdict.status}: {verdict.reason}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
