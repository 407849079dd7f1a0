# The job of the GitHub Action (action.yml) in a container, for a fleet of Kubernetes
# Jobs or any scheduler rather than Actions: the same command, `ralphstate ci`, in a
# checkout of the base branch mounted or cloned at /work, its options as
# RALPHSTATE_CI_* variables (docs/how-to/github-action.md, "The same in a container").
# Add the agent's client to an image built FROM this one.
FROM python:3.12-slim

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# ralphstate from this repository's own files, as the action installs it.
COPY pyproject.toml README.md LICENSE /opt/ralphstate/
COPY ralphstate /opt/ralphstate/ralphstate
RUN pip install --no-cache-dir /opt/ralphstate \
    && useradd --create-home --uid 10001 loop

USER 10001
WORKDIR /work
ENTRYPOINT ["ralphstate", "ci"]
