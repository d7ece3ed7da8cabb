# Every target sets up what it needs: a fresh machine has only Python 3.11, pip, gcc, git and kubectl.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# program:Debian package, for what the playground network runs (playground/network/requirements.py)
# and what real nodes run (playground/realnode: containerd, runc, the CNI plugins)
HOST_TOOLS := ip:iproute2 nft:nftables nsenter:util-linux wireguard-go:wireguard-go wg:wireguard-tools conntrack:conntrack \
  containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins
# program:Debian package, for what builds and runs container images without Docker (tools/images, its tests)
IMAGE_TOOLS := mmdebstrap:mmdebstrap umoci:umoci runc:runc ctr:containerd

.PHONY: venv test test-emulator test-real real-k8s opentofu lint demo demo-real bench clean mirror dist image host-tools image-tools pulumi-engine

venv: $(STAMP) host-tools image-tools

# The Debian packages of the program:package pairs $(1) whose program is missing, installed (as root, through
# apt-get); $(2) says what needs them.
define install-missing
@missing=$$(for tool in $(1); do \
  PATH="$$PATH:/usr/sbin:/sbin" command -v $${tool%%:*} >/dev/null 2>&1 || echo $${tool##*:}; done); \
if [ -n "$$missing" ]; then \
  echo "installing $$missing ($(2))"; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
fi
endef

# The Debian tools playground clusters need.
host-tools:
	$(call install-missing,$(HOST_TOOLS),the playground network and real nodes need them)

# The Debian tools container images are built and tried with: mmdebstrap, umoci, runc, containerd.
image-tools:
	$(call install-missing,$(IMAGE_TOOLS),container images are built and run with them)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The emulator suite, then the real leg (or one line saying why it is skipped). When there is a real leg, the
# tests it runs (marked `cluster`) run there only, on the real server, which is right where the two disagree:
# the emulator leg keeps of them those whose point is the emulator (marked `emulator`). Without Go to build the
# real control plane, the emulator leg runs them all.
test: venv
	@assets="$$($(PYTHON) tools/realk8s/build.py --skip-without-go)" || exit 1; \
	if [ -n "$$assets" ]; then \
	  $(MAKE) --no-print-directory test-emulator EMULATOR_MARKS="not cluster or emulator" && \
	  $(MAKE) --no-print-directory test-real; \
	else \
	  $(MAKE) --no-print-directory test-emulator; \
	fi

# Every test on the emulator (EMULATOR_MARKS, a marker expression, narrows them), on EMULATOR_WORKERS pytest-xdist
# workers (0: one after the other in a single pytest).
EMULATOR_WORKERS ?= 0
test-emulator: venv
	$(BIN)/python -m pytest $(if $(EMULATOR_MARKS),-m "$(EMULATOR_MARKS)") -n $(EMULATOR_WORKERS) $(PYTEST_ARGS)

# The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) built from the
# Go modules pinned in tools/realk8s into ~/.cache/liqo-iac/kubernetes/<version>/: minutes once, nothing after.
real-k8s:
	$(PYTHON) tools/realk8s/build.py

# OpenTofu, built from the Go module pinned in tools/opentofu into ~/.cache/liqo-iac/opentofu/<version>/ (a few
# minutes once, nothing after): tests/terraform/test_opentofu.py runs the quick start with it where it is built.
opentofu:
	$(PYTHON) tools/opentofu/build.py

# The real leg: the API behaviour suite against a real-binary cluster, then every test marked `cluster`
# (conftest marks each test that starts playground clusters) in real-binary mode on REAL_WORKERS pytest-xdist
# workers, OpenTofu's quick start among them (OpenTofu is built first). Without Go, one line says it is skipped.
REAL_WORKERS ?= 0
test-real: venv
	@assets="$$($(PYTHON) tools/realk8s/build.py --skip-without-go)" || exit 1; \
	[ -n "$$assets" ] || exit 0; \
	$(PYTHON) tools/opentofu/build.py --skip-without-go >/dev/null || exit 1; \
	KUBEBUILDER_ASSETS="$$assets" $(BIN)/python -m tests.realleg --workers $(REAL_WORKERS) $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Two playground clusters peered by `terraform apply` of examples/terraform (builds the provider mirror on the way).
demo: venv
	$(BIN)/python -m playground.demo

# The same quick start on real nodes (containerd, kubelet, kube-proxy, CoreDNS): the real binaries built first
# (make real-k8s, minutes once), the runtime and test images built from Debian packages and loaded into every node.
demo-real: venv
	@assets="$$($(PYTHON) tools/realk8s/build.py)" || exit 1; \
	KUBEBUILDER_ASSETS="$$assets" $(BIN)/python -m playground.demo --real

# The release artifacts into dist/: the wheels of the repository's distributions (packaging/<distribution>/, built
# by tools/dist.py), then the Terraform provider as a self-contained executable (PyInstaller, cached in
# ~/.cache/liqo-iac/terraform-provider/ by the content of what goes in), zipped for linux_amd64, with its
# SHA256SUMS and registry manifest (tools/release).
dist: venv
	$(PYTHON) tools/dist.py --out dist
	$(BIN)/python -m tools.release dist --out dist

# The runtime image, ghcr.io/liqo-iac/runtime:<version>, as an OCI archive in dist/images/: Debian bookworm packages
# (mmdebstrap) and the pinned wheels of packaging/runtime/, no Docker or registry (tools/images, docs/images.md).
image: image-tools
	$(PYTHON) tools/images/build.py runtime --out dist/images

# The filesystem mirror Terraform and OpenTofu install `liqo-iac/liqo` from: the release zip, for both registries'
# addresses, and its CLI configuration (MIRROR=dir to choose where; default build/terraform-mirror).
mirror: venv
	$(BIN)/python -m tools.release mirror $(if $(MIRROR),--dir $(MIRROR))

# The Pulumi CLI and pulumi-kubernetes' provider plugin, built from their Go modules (tools/pulumi-engine/) into
# ~/.cache/liqo-iac/pulumi/<version>/ for the end-to-end test of examples/pulumi (docs/pulumi/engine.md).
pulumi-engine: venv
	$(BIN)/python tools/pulumi_engine.py

bench: venv
	$(BIN)/python bench/apiserver.py
	$(BIN)/python bench/playground.py
	$(BIN)/python bench/peering.py
	$(BIN)/python bench/terraform.py
	$(BIN)/python bench/offloading.py
	$(BIN)/python bench/reflection.py
	$(BIN)/python bench/network.py

clean:
	rm -rf $(VENV) .playground .pytest_cache .mypy_cache .ruff_cache dist
