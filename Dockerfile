# syntax=docker/dockerfile:1
# Build: a wheel of the package and its runtime dependencies only.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY autoscaler ./autoscaler
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Run: slim base, non-root, no build tools, no dev dependencies.
FROM python:3.11-slim
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin autoscaler
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels autoscaler && rm -rf /wheels
COPY config /etc/autoscaler
USER 10001:10001
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["autoscaler"]
CMD ["run"]
