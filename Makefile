# Every target sets up what it needs: a fresh machine has only Python 3.11, pip, gcc, git and kubectl.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv test lint demo bench clean mirror pulumi-engine

venv: $(STAMP)

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

# The Pulumi CLI and pulumi-kubernetes' provider plugin, built from their Go modules (tools/pulumi-engine/) into
# ~/.cache/liqo-iac/pulumi/<version>/ for the end-to-end test of examples/pulumi (docs/pulumi/engine.md).
pulumi-engine: venv
	$(BIN)/python tools/pulumi_engine.py

bench: venv
	$(BIN)/python bench/apiserver.py
	$(BIN)/python bench/playground.py
	$(BIN)/python bench/peering.py
	$(BIN)/python bench/terraform.py

clean:
	rm -rf $(VENV) .playground .pytest_cache .mypy_cache .ruff_cache
