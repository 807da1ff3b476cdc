# One image for every Sprig process; docker-compose.yml picks the verb.
FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY sprig sprig
COPY config config
COPY controller controller
COPY cluster cluster
COPY console console
COPY tasks tasks
COPY engine engine
COPY spark_jobs spark_jobs
COPY monitoring monitoring
COPY templates templates
COPY static static
COPY manage.py ./
RUN pip install --no-cache-dir ".[postgres]"
ENV DJANGO_SETTINGS_MODULE=config.settings.production \
    SPRIG_DATA_DIR=/data
ENTRYPOINT ["sprig"]
