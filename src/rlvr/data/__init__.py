"""Tasks and datasets: records with a prompt, a reference and a verifier name."""

from rlvr.data.records import TaskRecord

__all__ = ["TaskRecord"]
