"""`rlvr view`: a read-only web page over run directories (see rlvr.cli.view).

    rollouts.py   rollouts.jsonl by step (byte bisection: a 1 GB file opens at once)
    runinfo.py    one run directory: curves, evaluations, status, notes on its files
    attempts.py   a step's attempts grouped by prompt, audit flags, the strict re-grade
    episodes.py   an attempt's episode (its transcript, trained vs context), episode curves
    page.py       the HTML page (our script and style, plotly.js from its package)
    server.py     the JSON API and the page, on starlette + uvicorn
    export.py     the page as one self-contained file
"""
