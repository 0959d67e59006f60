# The API server. On start, docker/entrypoint.sh applies migrations (under a database lock, so
# replicas starting together do not race; and seeds the demo when SEED_DEMO=1), then runs the
# command: uvicorn.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    LITELLM_LOCAL_MODEL_COST_MAP=True

# The uv that wrote uv.lock: another release may read or resolve the lock differently.
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir "uv==${UV_VERSION}"

WORKDIR /srv
# Dependencies first, so code changes do not reinstall them.
COPY pyproject.toml uv.lock ./
# The `otel` extra: OTEL_ENABLED=1 exports traces over OTLP without rebuilding.
RUN uv sync --locked --no-dev --extra otel

COPY alembic.ini ./
COPY migrations ./migrations
COPY app ./app
COPY docker/entrypoint.sh /usr/local/bin/toolcells-entrypoint

RUN useradd --create-home --uid 10001 toolcells && mkdir -p var && chown toolcells var
USER toolcells

EXPOSE 8000
# Liveness (/api/health): the process answers; a database outage does not make it unhealthy
# (/api/health/ready is the database and the migrations). A cold start (migrations, imports,
# the first listing of the MCP servers) takes 20-35 s: failures in the first 90 s do not count.
HEALTHCHECK --interval=10s --timeout=3s --start-period=90s --retries=5 \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=2).status != 200)"

ENTRYPOINT ["toolcells-entrypoint"]
# uvicorn itself (not `litestar run`) for its keep-alive: above a phone's or a proxy's
# idle time between requests, so a POST never meets a connection being closed (docs/operations.md).
CMD ["uvicorn", "app:create_app", "--factory", "--host", "0.0.0.0", "--port", "8000", "--timeout-keep-alive", "75"]
