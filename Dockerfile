# plink in a slim image (CPU torch, numba).  Build and run (README, "In Docker"):
#   docker build -t plink .
#   docker run --rm --user "$(id -u):$(id -g)" -v plink-cache:/cache -v "$PWD:/w" plink order dc.json -o hosts.txt
FROM python:3.11-slim

# openssh-client for `plink probe` (ssh-agent, config); fping/iperf3 are used when present.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client fping iperf3 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY plink ./plink
COPY probes ./probes
COPY solvers ./solvers

# The README's fresh-machine install: the CPU build of torch (the pin in constraints.txt
# matches only it), numba for the compiled ring search.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --extra-index-url "$TORCH_INDEX" -c constraints.txt . \
 && rm -rf /src \
 && mkdir -p /cache/numba /home/plink /w \
 && chmod 1777 /cache /cache/numba /home/plink /w

# Runs as any uid (docker run --user "$(id -u):$(id -g)", so files written into a bind mount
# belong to you): HOME and the cache are writable by everyone (sticky, like /tmp).  The
# compiled ring kernel is cached in /cache: mount a volume there (-v plink-cache:/cache) and
# only the first `plink order` of a ring compiles.
ENV HOME=/home/plink XDG_CACHE_HOME=/cache NUMBA_CACHE_DIR=/cache/numba
VOLUME /cache
USER 1000:1000
WORKDIR /w
ENTRYPOINT ["plink"]
CMD ["--help"]
