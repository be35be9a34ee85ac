# 音迹 Yinji: one image for every role (web, worker, beat); the role is the command.
#   docker build -t yinji .
#   docker run --rm yinji --help
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    YINJI_DATA_DIR=/data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY tracker ./tracker
COPY web ./web
COPY workers ./workers
RUN pip install . \
    && useradd --system --create-home --uid 10001 --user-group yinji \
    && mkdir -p /data \
    && chown yinji:yinji /data

# Never run as root: a worker parses hostile pages.
USER yinji
VOLUME ["/data"]
EXPOSE 8000

ENTRYPOINT ["yinji"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
