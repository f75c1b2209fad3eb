"""What a run hands back, as typed Python objects.

Each result keeps the whole report and audit as the library wrote them
(``report``, ``audit``), and lifts what a caller reads first: output,
how it ended, and every refused attempt with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class AuditRecord:
    """One decision of the gate, allowed or denied (a line of the audit log)."""

    seq: int
    op: str
    target: str
    decision: str
    violation: Optional[str]
    hard: bool
    rule: Optional[str]
    detail: Optional[str]
    bytes: int
    raw: dict = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict) -> "AuditRecord":
        return cls(
            seq=d["seq"],
            op=d["op"],
            target=d["target"],
            decision=d["decision"],
            violation=d.get("violation"),
            hard=d.get("hard", False),
            rule=d.get("rule"),
            detail=d.get("detail"),
            bytes=d.get("bytes", 0),
            raw=d,
        )


@dataclass(frozen=True)
class Denial:
    """A refused attempt: nothing of it happened.

    ``violation`` is the stable name (``fs_read_denied``, ``egress_denied``,
    ``max_ops`` ...); ``reason`` says why in words; ``hard`` is true when it
    halted the run (a budget), false when only that op was refused.
    """

    seq: int
    op: str
    target: str
    violation: str
    reason: str
    hard: bool


@dataclass(frozen=True)
class ScriptError:
    """The uncaught exception a script ended on: its type, message, line."""

    kind: str
    message: str
    line: Optional[int] = None


def _denials(report: dict, audit: list[AuditRecord]) -> list[Denial]:
    reasons = {a.seq: a.detail for a in audit if a.decision != "allowed"}
    return [
        Denial(
            seq=d["seq"],
            op=d["op"],
            target=d["target"],
            violation=d["violation"],
            reason=reasons.get(d["seq"]) or d["violation"],
            hard=d.get("hard", False),
        )
        for d in report.get("denials", [])
    ]


@dataclass(frozen=True)
class RunResult:
    """A script's or component's run.

    ``status`` is how it ended: ``completed``, ``exited``, ``hard_limit``,
    ``trapped`` or ``cancelled``. ``ok`` is true when it completed or exited 0.
    """

    stdout: str
    stderr: str
    exit_code: Optional[int]
    status: str
    violation: Optional[str]
    error: Optional[ScriptError]
    denials: list[Denial]
    audit: list[AuditRecord] = field(repr=False)
    report: dict = field(repr=False)
    stdout_bytes: bytes = field(repr=False, default=b"")
    stderr_bytes: bytes = field(repr=False, default=b"")
    trap: Optional[str] = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        return self.status in ("completed", "exited") and (self.exit_code or 0) == 0

    @classmethod
    def _from_native(cls, out: tuple[str, bytes, bytes]) -> "RunResult":
        text, stdout, stderr = out
        d = json.loads(text)
        report = d["report"]
        audit = [AuditRecord.from_json(a) for a in d["audit"]]
        err = report.get("error")
        return cls(
            stdout=stdout.decode("utf-8", "replace"),
            stderr=stderr.decode("utf-8", "replace"),
            exit_code=report.get("exit_code"),
            status=report["status"],
            violation=report.get("violation"),
            error=ScriptError(err["kind"], err["message"], err.get("line")) if err else None,
            denials=_denials(report, audit),
            audit=audit,
            report=report,
            stdout_bytes=stdout,
            stderr_bytes=stderr,
            trap=d.get("trap"),
        )


@dataclass(frozen=True)
class OpResult:
    """One op of a plan: its output when allowed, its denial when not."""

    op: str
    target: str
    ok: bool
    output: Any
    violation: Optional[str]
    reason: Optional[str]
    hard: bool
    raw: dict = field(repr=False, compare=False)


@dataclass(frozen=True)
class PlanResult:
    """A plan's run: one ``OpResult`` per attempted op, in order."""

    results: list[OpResult]
    stopped_reason: str
    denials: list[Denial]
    audit: list[AuditRecord] = field(repr=False)
    report: dict = field(repr=False)

    @classmethod
    def _from_native(cls, text: str) -> "PlanResult":
        d = json.loads(text)
        audit = [AuditRecord.from_json(a) for a in d["audit"]]
        results = []
        for r in d["results"]:
            denial = r.get("denial") or {}
            error = r.get("error") or {}
            results.append(
                OpResult(
                    op=r["op"],
                    target=r.get("target", ""),
                    ok=r.get("ok", False),
                    output=r.get("output"),
                    violation=denial.get("violation"),
                    reason=denial.get("message") or error.get("message"),
                    hard=bool(denial.get("hard", False)),
                    raw=r,
                )
            )
        return cls(
            results=results,
            stopped_reason=d["stopped_reason"],
            denials=_denials(d["report"], audit),
            audit=audit,
            report=d["report"],
        )
