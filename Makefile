# Every target sets up what it needs: a fresh machine has only Python 3.11, pip, gcc, git and kubectl.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# program:Debian package, for what the playground network runs (playground/network/requirements.py)
HOST_TOOLS := ip:iproute2 nft:nftables nsenter:util-linux

.PHONY: venv test lint demo bench clean mirror host-tools

venv: $(STAMP) host-tools

# The Debian tools playground clusters need, installed when missing (as root, through apt-get).
host-tools:
	@missing=$$(for tool in $(HOST_TOOLS); do \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v $${tool%%:*} >/dev/null 2>&1 || echo $${tool##*:}; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing $$missing (the playground network needs them)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Two playground clusters peered by `terraform apply` of examples/terraform (builds the provider mirror on the way).
demo: venv
	$(BIN)/python -m playground.demo

# The filesystem mirror Terraform installs the `liqo-iac/liqo` provider from (MIRROR=dir to choose where).
mirror: venv
	$(BIN)/python -m provider.mirror $(if $(MIRROR),--dir $(MIRROR))

bench: venv
	$(BIN)/python bench/apiserver.py
	$(BIN)/python bench/playground.py
	$(BIN)/python bench/peering.py
	$(BIN)/python bench/terraform.py

clean:
	rm -rf $(VENV) .playground .pytest_cache .mypy_cache .ruff_cache
