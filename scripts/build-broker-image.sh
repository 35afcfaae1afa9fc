#!/usr/bin/env bash
# Builds the RabbitMQ broker images rmqtorture runs, with no container
# registry: debootstrap a minimal Debian root filesystem, install that suite's
# rabbitmq-server into it, and import it into the local Docker Engine as one
# image. Idempotent: an image that already exists is not built again.
#
# Usage: scripts/build-broker-image.sh [--force] [SUITE...|all]
#   SUITE  a Debian suite; each gets rmqtorture/rabbitmq:<major.minor>-<suite>:
#            bookworm  rabbitmq-server 3.10.x (Erlang 25)
#            trixie    rabbitmq-server 4.0.x  (Erlang 27), the default image
#            forky     rabbitmq-server 4.3.x  (Erlang 29)
#          "all" builds the three. No SUITE: $RMQT_SUITE, else trixie.
# Env:   RMQT_IMAGE      tag for a single suite (default as above)
#        DEBIAN_MIRROR   Debian mirror URL (default: the one the host's apt uses)
#        RMQT_SUITE      Debian suite when none is named (default trixie)
# Needs: root (debootstrap, chroot), the docker CLI, Debian's package mirror.
# Why: the broker needs its own rabbitmq.conf (listen on all interfaces, guest
# allowed from the bridge gateway), the node runs as user rabbitmq with
# /usr/lib/rabbitmq/bin/rabbitmq-server as PID 1 (it handles SIGTERM), and the
# Erlang cookie must stay 0400 and owned by rabbitmq (created at first boot).
# Two problems of suites newer than the host's debootstrap are handled, each
# only when present: a suite debootstrap has no script for (forky) is
# bootstrapped with sid's script, and a Release file whose Valid-Until has
# passed (the mirror's forky and sid) is accepted with
# Acquire::Check-Valid-Until=false, inside the chroot only.
set -euo pipefail

FORCE=0
SUITES=()
for a in "$@"; do
  case "$a" in
    --force) FORCE=1 ;;
    all) SUITES+=(bookworm trixie forky) ;;
    -*) printf 'build-broker-image: unknown option %s\n' "$a" >&2; exit 2 ;;
    *) SUITES+=("$a") ;;
  esac
done
[ ${#SUITES[@]} -gt 0 ] || SUITES=("${RMQT_SUITE:-trixie}")

log() { printf 'build-broker-image: %s\n' "$*" >&2; }

# series SUITE: the rabbitmq-server major.minor Debian's SUITE ships (the tag's
# first half); checked against the installed version after the build.
series() {
  case "$1" in
    bookworm) echo 3.10 ;;
    trixie) echo 4.0 ;;
    forky|sid) echo 4.3 ;;
    *) echo "" ;;
  esac
}

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

# PLUGINS_REV names the current plugin directory layout (see trim_plugins);
# an image built before it gets the layout added on top, without a rebuild.
PLUGINS_REV=1
PLUGINS_DIR=/usr/lib/rabbitmq/plugins-rmqtorture

build() {
SUITE=$1 IMAGE=$2
if [ "$FORCE" = 0 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  rev=$(docker image inspect -f '{{ index .Config.Labels "org.rmqtorture.plugins-rev" }}' "$IMAGE")
  if [ "$rev" = "$PLUGINS_REV" ]; then
    log "image $IMAGE exists; nothing to do"
  else
    trim_plugins "$IMAGE"
  fi
  return 0
fi
if [ "$(id -u)" != 0 ]; then
  log "must run as root (debootstrap and chroot need it)"; exit 1
fi
MIRROR=$(mirror)
if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
WORK=$(mktemp -d /var/tmp/rmqt-rootfs.XXXXXX)
ROOT=$WORK/rootfs
trap cleanup EXIT

# A suite newer than this debootstrap has no script of its own: the
# development suites (forky, sid) share sid's.
SCRIPT=
if [ ! -e "/usr/share/debootstrap/scripts/$SUITE" ]; then
  SCRIPT=/usr/share/debootstrap/scripts/sid
  log "debootstrap has no script for $SUITE; using sid's"
fi

log "debootstrap $SUITE (minbase) into $ROOT"
debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" $SCRIPT >"$WORK/debootstrap.log" 2>&1 || {
  tail -30 "$WORK/debootstrap.log" >&2; exit 1; }

# No service may start inside the chroot while packages install.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOT/proc"
log "installing rabbitmq-server into the root filesystem"
# A Release file past its Valid-Until (the mirror's forky and sid) makes apt
# refuse the suite; accept it then, and only then.
if ! chroot "$ROOT" apt-get update -qq >"$WORK/update.log" 2>&1; then
  if grep -qi 'no longer valid\|expired' "$WORK/update.log"; then
    log "the mirror's $SUITE Release file is past its Valid-Until; accepting it inside the chroot"
    echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99rmqtorture-valid-until"
    chroot "$ROOT" apt-get update -qq >"$WORK/update.log" 2>&1 || { tail -30 "$WORK/update.log" >&2; exit 1; }
  else
    tail -30 "$WORK/update.log" >&2; exit 1
  fi
fi
chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -ec '
  apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null
  apt-get clean
' >"$WORK/install.log" 2>&1 || { tail -30 "$WORK/install.log" >&2; exit 1; }
rm -f "$ROOT/etc/apt/apt.conf.d/99rmqtorture-valid-until"
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
want=$(series "$SUITE")
if [ -n "$want" ] && [ "${VERSION#"$want".}" = "$VERSION" ]; then
  log "warning: $SUITE now ships rabbitmq-server $VERSION, not $want.x; the tag $IMAGE says $want"
fi

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
cleanup
trap - EXIT
trim_plugins "$IMAGE"
log "built $IMAGE (rabbitmq-server $VERSION)"
}

# trim_plugins IMAGE: points the broker at a plugins directory that holds
# only what rmqtorture's scenarios start (the rabbit application, its
# prelaunch, the stream plugin, and what they depend on, read from their
# .app files), as links into the package's own plugins directory, which
# stays whole. Booting with all of Debian's plugin applications (77 on 4.0.5) on the code
# path costs RabbitMQ 4.0.5 about 2 s of every start (its feature flag
# scan alone took 2.2 s, 1.0 s with the trimmed directory; start to an
# accepted AMQP login 6.2-6.5 s, then 4.2-4.5 s, measured by kill and
# start of one container). RABBITMQ_PLUGINS_DIR set to the package's
# directory (docker run -e, or broker.env in a scenario's container)
# brings every plugin back.
trim_plugins() {
local image=$1 tmp
tmp="rmqt-trim-$$"
log "linking the plugins rmqtorture starts into $PLUGINS_DIR in $image"
docker rm -f "$tmp" >/dev/null 2>&1 || true
docker run --name "$tmp" --user root --entrypoint "" -i "$image" sh -ec '
  pkg=$(ls -d /usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins | head -1)
  cat >/tmp/closure.escript <<EOS
#!/usr/bin/env escript
main([Dir | Roots]) ->
    Apps = lists:foldl(fun(F, M) ->
        {ok, [{application, N, Props}]} = file:consult(F),
        D = filename:basename(filename:dirname(filename:dirname(F))),
        Deps = proplists:get_value(applications, Props, []) ++ proplists:get_value(included_applications, Props, []),
        M#{N => {D, Deps}}
    end, #{}, filelib:wildcard(Dir ++ "/*/ebin/*.app")),
    Want = walk([list_to_atom(R) || R <- Roots], Apps, #{}),
    [io:format("~s~n", [D]) || {D, _} <- maps:values(maps:with(maps:keys(Want), Apps))].
walk([], _, Seen) -> Seen;
walk([A | T], Apps, Seen) when is_map_key(A, Seen) -> walk(T, Apps, Seen);
walk([A | T], Apps, Seen) ->
    case Apps of
        #{A := {_, Deps}} -> walk(Deps ++ T, Apps, Seen#{A => true});
        _ -> walk(T, Apps, Seen)
    end.
EOS
  rm -rf '"$PLUGINS_DIR"' && mkdir -p '"$PLUGINS_DIR"'
  for d in $(escript /tmp/closure.escript "$pkg" rabbit rabbitmq_prelaunch rabbitmq_stream); do
    ln -s "$pkg/$d" '"$PLUGINS_DIR"'/
  done
  rm /tmp/closure.escript
  ls '"$PLUGINS_DIR"' | grep -q "^rabbit-" && ls '"$PLUGINS_DIR"' | grep -q "^rabbitmq_stream-"
' </dev/null >/dev/null
docker commit \
  --change 'USER rabbitmq' \
  --change 'CMD ["/usr/lib/rabbitmq/bin/rabbitmq-server"]' \
  --change "ENV RABBITMQ_PLUGINS_DIR=$PLUGINS_DIR" \
  --change "LABEL org.rmqtorture.plugins-rev=$PLUGINS_REV" \
  "$tmp" "$image" >/dev/null
docker rm "$tmp" >/dev/null
}

cleanup() {
  umount "$ROOT/proc" 2>/dev/null || true
  rm -rf "$WORK"
}

for SUITE in "${SUITES[@]}"; do
  if [ -n "${RMQT_IMAGE:-}" ] && [ ${#SUITES[@]} = 1 ]; then
    IMAGE=$RMQT_IMAGE
  else
    v=$(series "$SUITE")
    [ -n "$v" ] || { log "unknown suite $SUITE: name bookworm, trixie or forky (or set RMQT_IMAGE)"; exit 2; }
    IMAGE="rmqtorture/rabbitmq:$v-$SUITE"
  fi
  build "$SUITE" "$IMAGE"
done
