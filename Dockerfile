# The one runtime image: every component (`python -m runtime <component>`) runs from it.
#
# Its name and tag are a contract (runtime/api/image.py): ghcr.io/liqo-iac/runtime:<package version>.
#   docker build -t "ghcr.io/liqo-iac/runtime:$(python -c 'from runtime.api.image import package_version as v; print(v())')" .
# Only the `runtime` package goes into the wheel (the build context holds nothing else, see .dockerignore).

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY runtime ./runtime
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
# the distroless "nonroot" uid, which the install manifests' securityContext runs as
USER 65532:65532
ENTRYPOINT ["python", "-m", "runtime"]
