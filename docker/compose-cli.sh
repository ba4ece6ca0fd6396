# Sourced by the deploy scripts: the Compose CLI that is there, the plugin first
# (`docker compose`, Compose v2), else the standalone `docker-compose` (1.29, as Debian
# bookworm ships it). Sets the array `compose_cli`.
if docker compose version >/dev/null 2>&1; then
    compose_cli=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose_cli=(docker-compose)
else
    echo "neither \`docker compose\` (the Compose plugin) nor \`docker-compose\` is installed" >&2
    exit 1
fi
