"""`rlvr serve`: verifiers behind HTTP, and the client that grades against them.

    settings.py     ServeSettings: every knob of a server, declared once
    grader.py       Grader: a bounded queue feeding the verifier pool's worker processes
    stats.py        request/verdict counters and latency percentiles for /metrics
    app.py          the starlette app: /verify, /verify/one, /health, /metrics
    body.py         request bodies (size, time, strict JSON) and answers (always encodable)
    access.py       bind policy, Host allow-list, JSON content type (also `rlvr view`'s)
    transport.py    uvicorn with head/body/write timeouts and a connection cap
    server.py       bind the socket and run the app on uvicorn
    client.py       ServeClient: batches, concurrency, retries on 429, many servers
    remote_pool.py  RemoteVerifierPool: the client as a BatchVerifier (reward.backend=remote)

Only client.py and remote_pool.py are needed on the caller's side; they import httpx
(the `serve` extra) and nothing of starlette or uvicorn.
"""
