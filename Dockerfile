# picoora's container image: the gateway on a slim Python, as a non-root user, data in /data.
#   docker build -t picoora .     docker run --env-file .env -p 127.0.0.1:18790:18790 -v picoora-data:/data picoora
# No secret is ever copied in or set here: tokens and passwords come from the environment at run time.

FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY picoora ./picoora
# Wheels for picoora and every dependency of the full product (the `all` extra: gateway, Telegram, Oracle,
# MCP, bulk embedding), so the final stage installs with no compiler and no cache.
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[all]'

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PICOORA_HOME=/data \
    PICO_GATEWAY_HOST=0.0.0.0 \
    PICO_GATEWAY_PORT=18790 \
    PATH=/opt/picoora/bin:$PATH
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin picoora \
    && mkdir -m 0700 /data \
    && chown picoora:picoora /data \
    && python -m venv /opt/picoora
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    /opt/picoora/bin/pip install --no-cache-dir --no-index --find-links /wheels 'picoora[all]'
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 18790
# The gateway answers /health without a token; python does the probe, so no curl is needed in the image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PICO_GATEWAY_PORT', '18790'), timeout=4)"]
ENTRYPOINT ["picoora"]
CMD ["gateway"]
