"""Evidence tasks (queue ``default``): the scheduled signed tree head."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from workers.tasks._base import TASK_OPTIONS, Progress, once, rt


@shared_task(name="yinji.evidence.publish_tree_head", **TASK_OPTIONS)
def publish_tree_head(self: Task) -> dict[str, Any]:
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
