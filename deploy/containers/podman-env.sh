# Sourced by the container scripts: podman on these machines needs the runc runtime and an empty
# default_ulimits (the kernel refuses podman's default nofile limit here), so the scripts point
# CONTAINERS_CONF at their own containers.conf unless the caller chose one.
if [[ -z ${CONTAINERS_CONF:-} ]]; then
  CONTAINERS_CONF=${TMPDIR:-/tmp}/kbfleet-containers.conf
  cat > "$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF
fi
