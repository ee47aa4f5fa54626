# plink in a slim image:  docker build -t plink . && docker run --rm -v "$PWD:/w" -w /w plink order dc.json
FROM python:3.11-slim

# openssh-client for `plink probe`; fping/iperf3 are used when present.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client fping iperf3 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY plink ./plink
COPY probes ./probes
COPY solvers ./solvers

# torch: the CPU build (the default PyPI build pulls several GB of CUDA packages).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --index-url "$TORCH_INDEX" torch==2.13.0 \
 && pip install --no-cache-dir -c constraints.txt ".[fast]" \
 && useradd --create-home plink

USER plink
# numba caches the compiled ring kernel here (site-packages is not writable by this user).
ENV NUMBA_CACHE_DIR=/home/plink/.cache/numba
WORKDIR /home/plink
ENTRYPOINT ["plink"]
CMD ["--help"]
