"""benchmarks/tools/profile_learning.py and its phase meter: a phase's peak is the true
high-water mark of the process while it ran (a transient freed before the phase ends
still counts), phases nest, and the hooks label every phase of a tiny training run."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import pytest

from benchmarks.tools import phase_meter, profile_learning
from train_helpers import plugin_reward, tiny_config

MB = 2**20
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@linux
def test_a_freed_transient_counts_in_its_phase_and_its_parents():
    meter = phase_meter.PhaseMeter()
    if not meter.exact:
        pytest.skip("this kernel refuses to reset the RSS high-water mark")
    with meter.phase("outer"):
        with meter.phase("inner"):
            # Fresh pages from mmap, written so each is resident: a bytes object would come
            # from malloc, which may reuse memory an earlier test left in this process's
            # heap (the trainer's retain_freed_memory keeps it), and then RSS never rises.
            transient = mmap.mmap(-1, 200 * MB)
            chunk = b"\x01" * MB
            for offset in range(0, 200 * MB, MB):
                transient[offset:offset + MB] = chunk
            transient.close()
        with meter.phase("quiet"):
            pass
    inner, quiet, outer = meter.records  # in the order the phases ended
    assert (inner.label, quiet.label, outer.label) == ("outer/inner", "outer/quiet", "outer")
    assert inner.rise >= 190 * MB and inner.after - inner.before < 100 * MB
    assert outer.peak >= inner.peak  # a child's peak is its parent's too
    assert quiet.rise < 20 * MB  # the mark was reset when "inner" ended
    assert inner.faults >= 190 * MB // 4096  # fresh pages were faulted in
    assert inner.started < quiet.started
    assert 0 <= inner.system <= inner.cpu


@linux
def test_every_phase_of_a_tiny_run_is_labelled(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    meter = phase_meter.PhaseMeter()
    profile_learning.install_hooks(meter, monkeypatch.setattr)
    from rlvr.training.run import train

    train(tiny_config("steps=2", "checkpoint_every=1",
                      *plugin_reward("train_helpers:LengthVerifier")), tmp_path / "run")
    labels = {profile_learning.generic(r.label) for r in meter.records}
    for expected in ("load_model", "engine_setup", "sft", "eval", "eval/generate",
                     "checkpoint", "adam_state", "step", "step/generate", "step/verify",
                     "step/update", "step/update/adam_step"):
        assert expected in labels, expected
    assert any(label.startswith("step/update/") and "backward" in label for label in labels)
    text = profile_learning.report(meter, tmp_path / "run", depth=3)
    split = text.split("step  generate")[1].splitlines()
    assert [line.split()[0] for line in split[1:3]] == ["1", "2"]  # one line per step
