#!/usr/bin/env bash
# Builds the RabbitMQ broker image rmqtorture uses by default, with no container
# registry: debootstrap a minimal Debian trixie root filesystem, install trixie's
# rabbitmq-server (4.0.x, Erlang 27) into it, and import it into the local Docker
# Engine as one image. Idempotent: does nothing when the image already exists.
#
# Usage: scripts/build-broker-image.sh [--force]
# Env:   RMQT_IMAGE      image tag to build (default rmqtorture/rabbitmq:4.0-trixie)
#        DEBIAN_MIRROR   Debian mirror URL (default: the one the host's apt uses)
#        RMQT_SUITE      Debian suite (default trixie)
# Needs: root (debootstrap, chroot), the docker CLI, Debian's package mirror.
# Why: the broker needs its own rabbitmq.conf (listen on all interfaces, guest
# allowed from the bridge gateway), the node runs as user rabbitmq with
# /usr/lib/rabbitmq/bin/rabbitmq-server as PID 1 (it handles SIGTERM), and the
# Erlang cookie must stay 0400 and owned by rabbitmq (created at first boot).
set -euo pipefail

IMAGE=${RMQT_IMAGE:-rmqtorture/rabbitmq:4.0-trixie}
SUITE=${RMQT_SUITE:-trixie}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

log() { printf 'build-broker-image: %s\n' "$*" >&2; }

if [ "$FORCE" = 0 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "image $IMAGE exists; nothing to do"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "must run as root (debootstrap and chroot need it)"; exit 1
fi

# The mirror is the one the host's apt already uses: a deb822 .sources file or
# a one-line sources.list. Only the first plain Debian archive URI is taken.
mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local m
  m=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v -- '-security' | grep '/debian/*$' | head -1 || true)
  if [ -z "$m" ]; then
    m=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v -- '-security' | grep '/debian/*$' | head -1 || true)
  fi
  [ -n "$m" ] || { log "cannot find a Debian mirror in /etc/apt; set DEBIAN_MIRROR"; exit 1; }
  echo "$m"
}
MIRROR=$(mirror)

if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

WORK=$(mktemp -d /var/tmp/rmqt-rootfs.XXXXXX)
ROOT=$WORK/rootfs
cleanup() {
  umount "$ROOT/proc" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

log "debootstrap $SUITE (minbase) into $ROOT"
debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
  tail -30 "$WORK/debootstrap.log" >&2; exit 1; }

# No service may start inside the chroot while packages install.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOT/proc"
log "installing rabbitmq-server into the root filesystem"
chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -ec '
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null
  apt-get clean
' >"$WORK/install.log" 2>&1 || { tail -30 "$WORK/install.log" >&2; exit 1; }
umount "$ROOT/proc"
rm -f "$ROOT/usr/sbin/policy-rc.d"

# Listen on every interface of the container (a loopback-only listener makes the
# published port useless) and let guest in from the bridge gateway, where host
# clients come from. Log to the console so `docker logs` shows the node.
cat >"$ROOT/etc/rabbitmq/rabbitmq.conf" <<'CONF'
listeners.tcp.default = 5672
loopback_users.guest = false
log.console = true
log.console.level = info
log.file = false
CONF
# Debian's env file may pin the node to localhost; the container's hostname is the node name.
: >"$ROOT/etc/rabbitmq/rabbitmq-env.conf"

VERSION=$(chroot "$ROOT" dpkg-query -W -f='${Version}' rabbitmq-server)
log "rabbitmq-server $VERSION installed; importing as $IMAGE"

tar -C "$ROOT" --numeric-owner \
  --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
  --exclude=./var/lib/rabbitmq/mnesia --exclude=./var/log/rabbitmq/* \
  --exclude=./var/cache/apt/* --exclude=./var/lib/apt/lists/* \
  -cf - . |
  docker import \
    --change 'USER rabbitmq' \
    --change 'ENV HOME=/var/lib/rabbitmq' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /var/lib/rabbitmq' \
    --change 'EXPOSE 5672' \
    --change "LABEL org.rmqtorture.image=broker org.rmqtorture.rabbitmq-version=$VERSION" \
    --change 'CMD ["/usr/lib/rabbitmq/bin/rabbitmq-server"]' \
    - "$IMAGE" >/dev/null
log "built $IMAGE (rabbitmq-server $VERSION)"
