# The runtime image, for those who build images with Docker (or another Dockerfile builder).
#
# It builds what `make image` builds without Docker or a registry (tools/images/runtimeimage.py),
# from the same lists in packaging/runtime/: the Debian bookworm packages (debian-packages.txt),
# what dpkg leaves out of them (dpkg-excludes.cfg), the Python packages pinned with their hashes
# (requirements.txt) and the runtime's own wheel (tools/dist.py); every module compiled to
# unchecked hash-based bytecode (a read-only root never needs a .pyc written); user 65532
# (nonroot); `python3 -m runtime` as the entry point. tests/packaging/test_dockerfile.py holds
# the two recipes to each other.
#
# One difference: the base. debian:bookworm-slim has bookworm's `required` packages (apt, passwd,
# tzdata, mount, e2fsprogs: about 20 MB) that `make image`'s Essential-only base leaves out.
#
# Its name and tag are a contract (runtime/api/image.py): ghcr.io/liqo-iac/runtime:<runtime/version.py>.
#   docker build -t "ghcr.io/liqo-iac/runtime:$(python3 -c 'import tools.dist as d; print(d.version())')" .

FROM debian:bookworm-slim AS wheels
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY tools/dist.py tools/dist.py
COPY packaging/runtime packaging/runtime
COPY runtime runtime
RUN python3 tools/dist.py runtime --out /wheels \
 && python3 -m pip install --quiet --disable-pip-version-check --no-compile --no-deps \
      --require-hashes --only-binary=:all: --target /site -r packaging/runtime/requirements.txt \
 && python3 -m pip install --quiet --disable-pip-version-check --no-compile --no-deps --target /site /wheels/*.whl \
 && rm -rf /site/bin

FROM debian:bookworm-slim
COPY packaging/runtime/dpkg-excludes.cfg /etc/dpkg/dpkg.cfg.d/liqo-runtime
COPY packaging/runtime/debian-packages.txt /tmp/debian-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(sed 's/#.*//' /tmp/debian-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/debian-packages.txt
COPY --from=wheels /site /usr/local/lib/python3.11/dist-packages
RUN python3 -m compileall -q -f --invalidation-mode unchecked-hash \
      /usr/lib/python3.11 /usr/lib/python3/dist-packages /usr/local/lib/python3.11/dist-packages \
 && echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'nonroot:x:65532:' >> /etc/group \
 && mkdir -p /home/nonroot && chown 65532:65532 /home/nonroot && chmod 750 /home/nonroot
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["python3", "-m", "runtime"]
CMD ["--help"]
