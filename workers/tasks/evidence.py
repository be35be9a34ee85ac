"""Evidence tasks (queue ``default``): the scheduled signed tree head and the daily
audit of the log."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from tracker.common.records import JSONObject
from workers.tasks._base import TASK_OPTIONS, Progress, once, rt


@shared_task(name="yinji.evidence.publish_tree_head", **TASK_OPTIONS)
def publish_tree_head(self: Task) -> JSONObject:
    """Scheduled (``YINJI_EVIDENCE_HEAD_MINUTES``): ``EvidenceLog.publish``, a signed
    tree head covering every record of the evidence log (a new one only when the log
    has grown), timestamped when ``YINJI_TSA_URL`` is set, and the timestamps still
    pending retried once the TSA answers again (it may have been down when they were
    asked for). Result: the head (``size``, ``root_hash``, ``time_utc``, …) with
    ``new_head``, ``timestamped``, ``stamp_error`` and how many tokens were requested
    and granted. A TSA that is down is the result's ``stamp_error``, not a failure:
    the next run asks again."""
    return once(self, lambda: _publish(self))


def _publish(task: Task) -> dict[str, Any]:
    Progress(task, total=1).start()
    return {**rt(task).library.evidence_log().publish().to_json(), "total": 1}


@shared_task(name="yinji.evidence.audit_log", **TASK_OPTIONS)
def audit_log(self: Task) -> JSONObject:
    """Daily (``yinji beat``): ``EvidenceLog.audit`` recomputes the whole log (every
    leaf hash, stored node, signed head's root, signature and timestamp token). When
    anything disagrees it sends the ``evidence.audit_failed`` alert (webhook, e-mail)
    listing the problems. Result: ``ok``, ``size``, ``heads``, ``problems``."""
    return once(self, lambda: _audit(self))


def _audit(task: Task) -> dict[str, Any]:
    Progress(task, total=1).start()
    report = rt(task).library.evidence_log().audit()
    out: dict[str, Any] = {
        "ok": report.ok,
        "size": report.size,
        "heads": report.heads,
        "stamped_heads": report.stamped_heads,
        "problems": report.problems[:100],
        "total": 1,
        "alerted": 0,
    }
    if not report.ok:
        from tracker.cases.alerts import Alerter

        shown = "\n".join(f"- {p}" for p in report.problems[:50])
        deliveries = Alerter.from_env().send(
            "evidence.audit_failed",
            {"size": report.size, "heads": report.heads, "problems": report.problems[:100]},
            subject="Yinji: the evidence log failed its audit / 证据日志审计失败",
            text=(
                f"The evidence log ({report.size} records, {report.heads} signed tree heads) "
                "no longer agrees with itself; no new tree head will be signed until it is "
                "restored from a backup. Problems:\n" + shown
            ),
        )
        out["alerted"] = sum(1 for d in deliveries if d.ok)
    return out
