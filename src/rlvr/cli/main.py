"""`rlvr` entry point. Each command lives in its own module exposing
`add_parser(subparsers, name, help)` (built with rlvr.cli.common) and `run(args) -> int`
(an exit status of rlvr.cli.exit_codes); modules are imported only when their command
runs, so `rlvr verify` never pays for importing torch."""

from __future__ import annotations

import argparse
import importlib
import sys

from rlvr import __version__
from rlvr.cli.exit_codes import BAD_INPUT, FAULT, OK
from rlvr.errors import ExternalFault, UserError

# command -> (module, one-line help). Add a line when a command lands.
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("rlvr.cli.verify", "check completions against references (JSONL batch or one-off)"),
    "train": ("rlvr.cli.train", "RLVR training (no arguments: the embedded arithmetic demo)"),
    "sft": ("rlvr.cli.sft", "supervised warm-start on worked examples"),
    "rm-train": ("rlvr.cli.rm_train", "train a Bradley-Terry reward model on preference "
                 "pairs (for the reward_model verifier)"),
    "merge-lora": ("rlvr.cli.merge_lora", "merge a LoRA adapter into its base model"),
    "import-model": ("rlvr.cli.import_model", "import a GGUF file or packaged model as an HF dir"),
    "eval": ("rlvr.cli.eval", "measure a model or checkpoint: greedy accuracy, pass@k, maj@k"),
    "audit": ("rlvr.cli.audit", "flag reward hacks in a run's passed attempts (exit 1 if any)"),
    "view": ("rlvr.cli.view", "a local web page for runs: curves, attempts, verdicts (live)"),
    "serve": ("rlvr.cli.serve", "serve verifiers over HTTP (POST /verify; many trainers, "
              "many machines)"),
    "vllm-serve": ("rlvr.cli.vllm_serve", "start a vLLM server for sampling.engine=vllm "
                   "(server mode)"),
    "judge-serve": ("rlvr.cli.judge_serve", "serve a local model as an OpenAI-compatible chat "
                    "endpoint (for the judge verifier)"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning with "
                                     "verifiable rewards.")
    parser.add_argument("--version", action="version", version=f"rlvr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).add_parser(sub, name, help_text)
        else:  # listed in --help without importing it
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only=command)
    args = parser.parse_args(argv)
    args.argv = argv  # what a command that runs itself again passes (rlvr train, K >= 1)
    if command is None:
        parser.print_help()
        return OK if not argv else BAD_INPUT
    return run_command(command, args)


def run_command(command: str, args: argparse.Namespace) -> int:
    """Run `command`; a UserError or ExternalFault its module left uncaught becomes its
    exit status (rlvr.cli.exit_codes) with the message on stderr, not a traceback."""
    try:
        return int(importlib.import_module(COMMANDS[command][0]).run(args) or OK)
    except UserError as exc:
        print(f"rlvr {command}: {exc}", file=sys.stderr)
        return BAD_INPUT
    except ExternalFault as exc:
        print(f"rlvr {command}: {exc}", file=sys.stderr)
        return FAULT


if __name__ == "__main__":
    raise SystemExit(main())
