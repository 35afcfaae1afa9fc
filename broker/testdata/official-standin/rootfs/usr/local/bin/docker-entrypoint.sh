#!/usr/bin/env bash
# Stand-in for the official rabbitmq image's docker-entrypoint.sh
# (docker-library/rabbitmq, 4.x), doing what it does for what rmqtorture
# relies on. Started as root with a rabbitmq* command, it gives
# /var/lib/rabbitmq to the rabbitmq user (for rabbitmq-server) and runs
# itself again as that user (setpriv here, gosu there); then it sets
# RABBITMQ_USE_LONGNAME when the hostname is not a short one and execs
# the command.
set -euo pipefail

if [[ "$1" == rabbitmq* ]] && [ "$(id -u)" = 0 ]; then
	if [ "$1" = rabbitmq-server ]; then
		find /var/lib/rabbitmq \! -user rabbitmq -exec chown rabbitmq '{}' +
	fi
	exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [ -z "${RABBITMQ_USE_LONGNAME:-}" ] && [ "$(hostname)" != "$(hostname -s)" ]; then
	: "${RABBITMQ_USE_LONGNAME:=true}"
fi

exec "$@"
