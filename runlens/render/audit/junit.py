"""The audit as JUnit XML, so CI systems show it in their test views.

One ``testsuite`` per run, one ``testcase`` per detector of that run (and
per finding code that no detector outcome names, such as ``baseline_*``
and the error of an unreadable run). A finding at or above ``--fail-on``
is a ``failure`` of its test case; a detector that crashed is an
``error``; a skipped detector is ``skipped`` with its reason; findings
below the threshold are listed in ``system-out``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runlens.diagnosis import Severity
from runlens.render.escape import xml_text

if TYPE_CHECKING:
    from runlens.audit import AuditResult, AuditRow


def render_audit_junit(result: AuditResult, *, fail_on: str = "error") -> str:
    """A ``testsuites`` document; counts are per suite and in total."""
    root = ET.Element("testsuites", name="runlens audit")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for row in result.rows:
        suite = ET.SubElement(root, "testsuite", name=_clean(row.name))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for code, state, reason, found in _cases(row):
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=_classname(row), name=code)
            failing = [f for f in found if _reaches(f["severity"], fail_on)]
            if failing:
                counts["failures"] += 1
                first = failing[0]
                failure = ET.SubElement(case, "failure", message=_clean(first["title"]),
                                        type=first["severity"])
                failure.text = _clean("\n".join(_describe(f) for f in failing))
            elif state == "crashed":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=_clean(reason), type="crashed")
            elif state == "skipped":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_clean(reason))
            below = [f for f in found if f not in failing]
            if below:
                ET.SubElement(case, "system-out").text = _clean("\n".join(_describe(f) for f in below))
        suite.set("tests", str(counts["tests"]))
        for key in ("failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
            totals[key] += counts[key]
        totals["tests"] += counts["tests"]
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="run", value=_clean(row.run))
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cases(row: AuditRow) -> list[tuple[str, str, str, list[Mapping[str, Any]]]]:
    """(code, state, reason, findings) for every detector outcome and unclaimed finding code."""
    by_code: dict[str, list[Mapping[str, Any]]] = {}
    for f in row.findings:
        by_code.setdefault(f["code"], []).append(f)
    cases = [(code, state, reason, by_code.pop(code, [])) for code, state, reason in row.outcomes]
    cases += [(code, "ran", "", found) for code, found in sorted(by_code.items())]
    return cases


def _reaches(severity: str, fail_on: str) -> bool:
    return Severity(severity).reaches(fail_on)


def _classname(row: AuditRow) -> str:
    return "runlens." + _clean(row.name).replace(".", "_")


def _describe(f: Mapping[str, Any]) -> str:
    step = "" if f.get("step") is None else f" (step {f['step']})"
    return f"[{f['severity']}] {f['code']}{step}: {f['title']}"


def _clean(text: str) -> str:
    # XML 1.0 cannot hold most control characters, lone surrogates, U+FFFE or U+FFFF, and
    # run-supplied text may contain them: each becomes a visible escape.
    return xml_text(text)
