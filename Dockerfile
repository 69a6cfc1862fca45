# The attest toolkit in a container: `docker run --network none IMAGE replay --name N -- CMD`.
# BASE_IMAGE is any Debian-like image with python3 and its venv module (python:3.12-slim by default).
# Extend it with your agent's dependencies:
#   FROM attest:latest
#   USER 0
#   RUN pip install -r requirements.txt
#   USER attest
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

# A venv rather than the system interpreter: Debian's python refuses system-wide pip installs
# (PEP 668), and the venv keeps the toolkit's dependencies apart from the base image's.
ENV VIRTUAL_ENV=/opt/attest \
    PATH=/opt/attest/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

COPY pyproject.toml README.md /tmp/attest-src/
COPY toolkit/ /tmp/attest-src/toolkit/

# Bytecode is compiled at install time on purpose: the venv is read-only to the runtime user, so
# without it every run would recompile every module it imports.
RUN python3 -m venv "$VIRTUAL_ENV" \
    && pip install /tmp/attest-src \
    && rm -rf /tmp/attest-src /root/.cache \
    && useradd --uid 1000 --user-group --create-home --shell /bin/sh attest \
    && mkdir -p /workspace \
    && chown attest:attest /workspace

USER attest
WORKDIR /workspace
ENTRYPOINT ["attest"]
CMD ["--help"]
