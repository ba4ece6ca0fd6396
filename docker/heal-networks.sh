# Sourced by docker/client-stack.sh and docker/openwebui/deploy.sh, after they define
# `compose` and `say`. On a Docker 20.10 daemon that leaves a swarm (another test on a
# shared machine), bridge networks created while it was a manager lose their endpoints: the
# containers keep running with no network at all. heal_networks recreates those, twice at
# most, through `recreate SERVICE...` (the caller's: compose up --force-recreate, with
# whatever environment its deploy needs), then says so and fails.
heal_networks() {
    local round service c broken
    for round in 1 2 3; do
        broken=()
        for service in $(compose config --services); do
            c="$(compose ps -q "$service")"
            if [ -n "$c" ] && [ "$(docker inspect --format '{{len .NetworkSettings.Networks}}' "$c")" -eq 0 ]; then
                broken+=("$service")
            fi
        done
        [ ${#broken[@]} -eq 0 ] && return 0
        if [ "$round" -eq 3 ]; then
            say "${broken[*]} still run without any network (an engine fault): deploy again"
            return 1
        fi
        say "${broken[*]} lost their networks (an engine fault): recreating them"
        recreate "${broken[@]}"
    done
}
