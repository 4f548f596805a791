# Everything a newcomer needs: `make demo` runs the main job, `make test` runs the test suite.
# Both create .venv and install what they need on a fresh clone (Python 3.10+ is all it takes).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,chroma,local,postgres,agents,openai,ui,mcp,qdrant,milvus,otel,docs,mastra

.PHONY: setup system-tools demo test test-fast lint format typecheck bench clean

setup: $(VENV)/.setup-done

$(VENV)/.setup-done: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[$(EXTRAS)]"
	$(BIN)/langchain-mastra-memory setup
	touch $@

# Programs the tests drive, installed when missing (as root, from Debian's packages; elsewhere
# the tests say what to install): headless Chromium for the memory explorer; QEMU's user mode
# and objdump, which check that the native code the tests run works on any x86-64 (AVX2);
# PgBouncer, which the pooler tests put in front of the session's PostgreSQL.
SYSTEM_TOOLS := chromium chromium-driver qemu-user binutils pgbouncer
system-tools:
	@command -v chromedriver >/dev/null && { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; } \
		&& command -v qemu-x86_64 >/dev/null && command -v objdump >/dev/null \
		&& { command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer; } || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_TOOLS) >/dev/null; \
	else echo "install $(SYSTEM_TOOLS) (the UI and portability tests drive them)"; fi

demo: setup
	$(BIN)/langchain-mastra-memory demo

test: setup system-tools
	$(BIN)/python -m pytest

test-fast: setup
	$(BIN)/python -m pytest -m "not slow and not postgres and not chroma_server and not browser and not langgraph_server and not mastra"

lint: setup
	$(BIN)/ruff check langchain_mastra_memory tests bench
	$(BIN)/ruff format --check langchain_mastra_memory tests bench

format: setup
	$(BIN)/ruff format langchain_mastra_memory tests bench
	$(BIN)/ruff check --fix langchain_mastra_memory tests bench

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
