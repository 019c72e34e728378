"""The vLLM rollout engine (`sampling.engine: vllm`) and what it runs on.

    engine.py       VLLMEngine: colocated `vllm.LLM` or rlvr's vLLM server over HTTP
    runner.py       VLLMRunner: the side that runs where `vllm` is importable
    server.py       rlvr's vLLM server: one runner behind JSON over HTTP
    client.py       the server's HTTP client (the runner's methods)
    env.py          where vLLM lives: this interpreter or the optional .venv-vllm
    ray_servers.py  vLLM servers placed as Ray actors

Nothing here imports vllm at module level, so a config naming the engine can be checked
without it (this file imports nothing: the server runs in the vLLM environment).
"""
