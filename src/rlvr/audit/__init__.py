"""Find reward hacks the verifier does not know yet (`rlvr audit RUN`, docs/rewards.md,
"Auditing a run").

    strict.py     strict_recheck(verifier, completion, reference, prompt) -> str | None
    patterns.py   per-attempt tests: echo of the prompt, unevaluated, conflicting, ...
    answers.py    where a completion states answers (boxes, "answer is", bold)
    literals.py   answer text as exact values; answer forms
    episodes.py   the episode checks: an environment fault paid, an answer outside the turn
    detect.py     the detectors over a run's steps, with their thresholds
    rundata.py    reading a run directory (errors name file and line)
    runaudit.py   audit_run(RunData) -> AuditResult
    report.py     text / JSON report, flagged attempts as JSONL
    live.py       LiveAudit: the trainer's every-N-steps warnings
"""

from rlvr.audit.strict import strict_recheck

__all__ = ["strict_recheck"]
