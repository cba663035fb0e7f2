# syntax=docker/dockerfile:1
# The `autoscaler run` image: docker build -t autoscaler:latest .
# Two stages: the build stage makes wheels of the package and of its runtime dependencies only
# (pyproject's [project.dependencies]; no extras); the runtime stage installs those wheels and nothing else.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
# A C compiler, for this stage only: the modules every sync runs are compiled with mypyc (AUTOSCALER_COMPILE=1,
# setup.py, autoscaler/native.py); the wheel carries them compiled and needs no compiler to install or run.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY autoscaler ./autoscaler
RUN AUTOSCALER_COMPILE=1 pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
LABEL org.opencontainers.image.title="autoscaler" \
      org.opencontainers.image.description="External Kubernetes autoscaler: HPA decisions from Prometheus, plus HVPA" \
      org.opencontainers.image.licenses="Apache-2.0"
# MALLOC_ARENA_MAX: the service decodes large Prometheus answers in worker threads; glibc gives each thread
# its own malloc arena, and what the arenas keep after an answer is freed stayed in the RSS (bench/service.py).
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2
RUN groupadd --gid 10001 autoscaler \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin autoscaler
# The wheels are mounted for this one step, never copied into a layer. pip then leaves the image: nothing
# installs anything at run time.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels autoscaler \
    && pip uninstall --yes pip setuptools wheel
# The default settings (docs/configuration.md); in a cluster the ConfigMap is mounted over it.
COPY config/autoscaler.yaml /etc/autoscaler/autoscaler.yaml
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["autoscaler"]
CMD ["run", "--config", "/etc/autoscaler/autoscaler.yaml"]
