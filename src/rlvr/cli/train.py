"""`rlvr train`: RLVR training. With no arguments, the embedded demo: a tiny Llama with a
character tokenizer, a short supervised warm-start on (sloppy) worked examples of
2-digit addition, held-out accuracy, RL with the "exact" verifier, accuracy again.
Once model.path names a real model, the real-model profile sets the defaults you leave
unset: no warm-start, chat prompts, auto device, every core, lr 1e-6, 512 new tokens.

    rlvr train                                       # the embedded demo (a few minutes)
    rlvr train --config my.yaml algorithm.kl_beta=0.01 sampling.group_size=16
    rlvr train --run-dir runs/x steps=200            # choose the run directory
    rlvr train --resume runs/x                       # continue from its last checkpoint
    rlvr train --resume runs/x steps=400             # extend a run (see rlvr.training.resume)
    rlvr train --describe                            # every config field with its help
    rlvr train --log-every 10 > train.log 2>&1       # a progress line every 10 steps
    rlvr train --nproc 2 --run-dir runs/x ...        # 2 ranks (torchrun, FSDP2)
    rlvr train --nproc 2 --resume runs/x             # resume on 2 ranks (any number)

Several processes: --nproc N re-launches the same command under torchrun on this
machine (python -m torch.distributed.run --nproc-per-node N --standalone -m rlvr train
...), after checking the config here: a bad config, or a setting the ranks cannot run
yet (rlvr.training.config.check_distributed), exits 2 before any rank starts. The run
directory is chosen once, here, so every rank writes to the same one. torchrun's exit
status is passed through: 0 done, 1 a rank failed (its traceback is in the log; when a
rank dies, torchrun stops the others and the run resumes from its last checkpoint with
`rlvr train --nproc N --resume RUN_DIR`). Launching torchrun yourself works too
(torchrun --nproc-per-node N -m rlvr train --run-dir D ...): --run-dir (or --resume) is
then required, and --nproc is refused.

Progress goes to stderr: on a terminal a live bar (step/total, reward, accuracy, latest
held-out accuracy, s/step, ETA) with messages printed above it; anywhere else (a file,
CI, nohup, SLURM) one line every --log-every N steps (default 5, the config's
log_every) and for the first and last step, with the timings and tokens/s too. The
warm-start and held-out evaluations show theirs the same way. --quiet prints none.

Exit status: 0 done; 2 a bad config, data file, model path or resume request, found
before training starts; 3 a fault outside the run stopped it (a checkpoint that could not
be written, a full disk above all; every `rlvr serve` server of reward.backend=remote
gone): the message names it and the command that resumes the run from its last complete
checkpoint once the fault is fixed. Anything else that fails is a bug: it surfaces with
its traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from rlvr.cli.common import (config_command_parser, describe, is_main_rank, load_cli_config,
                             positive_int, with_log_every)
from rlvr.cli.exit_codes import BAD_INPUT, FAULT, OK


def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = config_command_parser(sub, name, help_text, __doc__)
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its "
                   "newest checkpoint with its own config.yaml; overrides may only change "
                   "steps (to extend it) and checkpoint, log and evaluation cadence")
    p.add_argument("--nproc", type=positive_int, metavar="N",
                   help="train on N processes of this machine (FSDP2; gloo on CPU, NCCL on "
                   "GPUs): re-launches this command under torchrun and passes its exit "
                   "status through (default: 1, this process)")


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError
    from rlvr.runs import Progress, default_run_dir
    from rlvr.training.config import TrainConfig
    from rlvr.training.resume import resume_config

    if args.describe:
        print(describe(TrainConfig))
        return OK
    args.overrides = with_log_every(args)
    nproc = getattr(args, "nproc", None)
    if nproc is not None and _under_torchrun():
        print("rlvr train: --nproc launches torchrun itself; under torchrun (WORLD_SIZE="
              f"{os.environ.get('WORLD_SIZE')}) drop --nproc", file=sys.stderr)
        return BAD_INPUT
    if nproc is not None and nproc > 1:
        return launch(args, nproc)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not (args.resume or args.run_dir):
        print("rlvr train: under torchrun give --run-dir (or --resume): every rank must "
              "write to the same run directory (or use rlvr train --nproc N)",
              file=sys.stderr)
        return BAD_INPUT
    try:
        if args.resume:
            if args.config or args.run_dir:
                raise ConfigError("--resume takes the run's own config.yaml and directory; "
                                  "drop --config and --run-dir")
            cfg, run_dir = resume_config(args.resume, args.overrides), Path(args.resume)
        else:
            cfg = load_cli_config(args)
            run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(cfg.name)
    except ConfigError as exc:
        print(f"rlvr train: config error: {exc}", file=sys.stderr)
        return BAD_INPUT
    _passive_openmp(cfg, args)
    progress = Progress(cfg.steps, quiet=args.quiet, log_every=cfg.log_every,
                        max_seconds=cfg.max_seconds)
    return _train(cfg, run_dir, bool(args.resume), progress)


def _passive_openmp(cfg: Any, args: argparse.Namespace) -> None:
    """Asynchronous rollouts (K >= 1) run with OMP_WAIT_POLICY=PASSIVE unless the operator
    set it. Why: the producers sample on the same cores while the trainer updates, and
    an idle OpenMP thread of the trainer otherwise spins (up to ~300,000 iterations)
    before it sleeps, so every parallel region waits on a thread a producer preempted.
    Measured on 2 cores beside a one-thread producer: the update took 10.6 s a step
    (mean) with passive threads, 14.8 s spinning (benchmarks/RESULTS.md, "Asynchronous
    rollouts"). The OpenMP runtime reads the variable once, when torch loads; if torch
    is loaded already (reading the config may: model.device auto), the command runs
    itself again with it set (execv: the same process id). Only the command line does
    this: `main([...])` called from a program other than that command changes nothing."""
    if (not cfg.rollout.asynchronous or "OMP_WAIT_POLICY" in os.environ
            or getattr(args, "argv", None) != sys.argv[1:]):
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if "torch" in sys.modules:
        sys.stdout.flush(), sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "rlvr", *args.argv])


def _under_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ


def launch(args: argparse.Namespace, nproc: int) -> int:
    """--nproc N: check the config here, then run this command (without --nproc, with
    the run directory chosen) under torchrun with N ranks; torchrun's exit status."""
    from rlvr.config import ConfigError, load_config
    from rlvr.training.config import TrainConfig, check_distributed
    from rlvr.training.resume import resume_config

    try:
        if args.resume:
            if args.config or args.run_dir:
                raise ConfigError("--resume takes the run's own config.yaml and directory; "
                                  "drop --config and --run-dir")
            cfg = resume_config(args.resume, args.overrides)
        else:
            cfg = load_config(TrainConfig, args.config, list(args.overrides))
        check_distributed(cfg, nproc, resume=bool(args.resume))
    except ConfigError as exc:
        print(f"rlvr train: config error: {exc}", file=sys.stderr)
        return BAD_INPUT
    arguments = torchrun_arguments(args, cfg)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
               "--standalone", "-m", "rlvr", "train", *arguments]
    code = _run_forwarding_signals(command)
    if code != 0:
        run_dir = args.resume or arguments[arguments.index("--run-dir") + 1]
        print(f"rlvr train: a rank failed (torchrun exit status {code}; the first failure "
              "is torchrun's 'Root Cause' above); the run resumes from its last checkpoint: "
              f"rlvr train --nproc {nproc} --resume {run_dir}", file=sys.stderr)
    return code


def torchrun_arguments(args: argparse.Namespace, cfg: Any) -> list[str]:
    """The arguments of `rlvr train` for every rank: these, less --nproc, with the run
    directory fixed (a default one is chosen here, once, not by each rank)."""
    from rlvr.runs import default_run_dir

    out: list[str] = []
    if args.resume:
        out += ["--resume", str(args.resume)]
    else:
        if args.config:
            out += ["--config", str(args.config)]
        out += ["--run-dir", str(args.run_dir or default_run_dir(cfg.name))]
    if args.quiet:
        out.append("--quiet")
    return out + list(args.overrides)


def _run_forwarding_signals(command: list[str]) -> int:
    """Run torchrun; SIGTERM/SIGHUP sent to this process go to it too (it stops its
    ranks), Ctrl-C reaches it through the terminal. Its exit status, 128+N for signal N."""
    child = subprocess.Popen(command)
    forwarded = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in forwarded}

    def forward(signum: int, frame: Any) -> None:
        child.send_signal(signum)

    for sig in forwarded:
        signal.signal(sig, forward)
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:  # torchrun got the same SIGINT: let it stop its ranks
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def _train(cfg: Any, run_dir: Path, resume: bool, progress: Any) -> int:
    from rlvr.errors import ExternalFault, UserError
    from rlvr.training.run import train

    try:
        summary = train(cfg, run_dir, resume=resume, progress=progress)
    # Bad input the set-up finds before training: the config, a data file, the model
    # path, the prompt style, the run to resume. Any other error is a bug and keeps its
    # traceback.
    except UserError as exc:
        print(f"rlvr train: {exc}", file=sys.stderr)
        return BAD_INPUT
    # Faults outside the run, mid-training: the run is sound up to its last checkpoint.
    except ExternalFault as exc:
        progress.close()  # the last step's line above the error, not below it
        print(f"rlvr train: {exc}\n{resume_hint(run_dir)}", file=sys.stderr)
        return FAULT
    finally:
        progress.close()  # an error's traceback starts below the bar, not on it
    if not is_main_rank():  # under torchrun rank 0 reports
        return OK
    before, after = summary["eval"]["before"], summary["eval"]["after"]
    if before and after:  # "before" was shown live when measured; this is the result
        print(f"held-out accuracy: {before['accuracy']:.3f} -> {after['accuracy']:.3f} "
              "(before -> after RL)")
    if summary.get("stopped"):  # the collapse watch ended it (a clean stop: exit 0)
        print(f"collapse watch: {summary['stopped']['message']}")
    if summary.get("best"):
        best = summary["best"]
        print(f"best held-out accuracy {best['accuracy']:.3f} at step {best['step']}: "
              f"{best['checkpoint']} (rlvr eval {run_dir} --best)")
    print(f"run dir: {run_dir}  ({summary['steps']} steps, {summary['wall_seconds']:.0f} s)")
    return OK


def resume_hint(run_dir: Path) -> str:
    """What a run stopped by a fault has kept, and the command that continues it."""
    from rlvr.runs.jsonl import read_jsonl
    from rlvr.training.checkpoint import checkpoint_step, latest_checkpoint

    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    if checkpoint is None:
        return "rlvr train: no checkpoint was written yet; start the run again"
    # a hint after a fault must not fail itself: damaged lines are skipped, not reported
    steps = []
    for _, record in read_jsonl(run_dir / "metrics.jsonl", "skip", missing_ok=True):
        try:
            steps.append(int(record["step"]))
        except (ValueError, KeyError, TypeError):
            continue
    logged = f" after step {max(steps)}" if steps else ""
    return (f"rlvr train: the run stopped{logged}; once that is fixed, continue it from its "
            f"last checkpoint (step {checkpoint_step(checkpoint)}): "
            f"rlvr train --resume {run_dir}")
