# Sourced by the client stacks' deploy scripts (docker/client-stack.sh,
# docker/openwebui/deploy.sh) after they set `here` (the stack's directory), `project` and
# `variant` (a variant's directory, or empty). `apply_variant NO_OVERRIDE STATE` takes the
# variant's compose.yaml as the override (else NO_OVERRIDE), its STATE file instead of the
# stack's own (in $state_file) and exports its `env` lines; `compose` then runs the
# compose CLI on the project with those files.
. "$(dirname "${BASH_SOURCE[0]}")/compose-cli.sh"

apply_variant() {
    local override="$1"
    state_file="$here/$2"
    if [ -n "$variant" ]; then
        [ -f "$variant/compose.yaml" ] && override="$variant/compose.yaml"
        [ -f "$variant/$2" ] && state_file="$variant/$2"
        if [ -f "$variant/env" ]; then set -a; . "$variant/env"; set +a; fi
    fi
    files=(-f "$here/compose.yaml" -f "$override")
}

compose() { "${compose_cli[@]}" -p "$project" "${files[@]}" "$@"; }
