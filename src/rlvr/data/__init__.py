"""Tasks and datasets: records with a prompt, a reference and a verifier name."""

from rlvr.data.arithmetic import ArithmeticTask
from rlvr.data.loading import REFERENCE_TRANSFORMS, DataError, FieldMapping, load_records
from rlvr.data.records import TaskRecord

__all__ = ["ArithmeticTask", "DataError", "FieldMapping", "REFERENCE_TRANSFORMS",
           "TaskRecord", "load_records"]
