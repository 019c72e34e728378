"""`python -m rlvr`: the command line (rlvr.cli)."""

from rlvr.cli.main import main

raise SystemExit(main())
