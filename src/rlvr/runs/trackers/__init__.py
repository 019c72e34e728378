"""Experiment trackers fed from a run's records (logging.backends): TensorBoard, W&B,
MLflow, trackio behind one small interface (base.Tracker); each is an optional extra."""

from rlvr.runs.trackers.base import ATTEMPT_COLUMNS, RunInfo, Tracker, attempt_rows
from rlvr.runs.trackers.fanout import TrackerError, TrackerSet
from rlvr.runs.trackers.registry import BACKENDS, TRACKER_NAMES, build_tracker, tracker_problem

__all__ = ["ATTEMPT_COLUMNS", "BACKENDS", "RunInfo", "TRACKER_NAMES", "Tracker",
           "TrackerError", "TrackerSet", "attempt_rows", "build_tracker", "tracker_problem"]
