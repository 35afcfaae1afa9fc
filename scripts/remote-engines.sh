#!/usr/bin/env bash
# Sets up the three engines the remote-engine tests run rmqtorture against
# (cmd/remote_integration_test.go), all on this machine and on loopback only:
#
#   ssh     a second sshd on 127.0.0.1:$RMQT_SSH_PORT with its own config,
#           host key and a client key made here, for DOCKER_HOST=ssh://root@
#           127.0.0.1:PORT (the Docker client's ssh transport runs `ssh …
#           docker system dial-stdio`, so the docker CLI must be on sshd's
#           PATH); host keys are checked (StrictHostKeyChecking yes) against
#           a known_hosts file written here, through an ssh config file that
#           the bin/ssh wrapper passes with -F (ssh reads ~/.ssh/config from
#           the user's passwd home, not $HOME, and this script leaves that
#           file alone);
#   tcp     the local Docker daemon's socket relayed by socat on
#           127.0.0.1:$RMQT_TCP_PORT, for DOCKER_HOST=tcp://127.0.0.1:PORT
#           (plain TCP: loopback only; a real remote daemon wants TLS, which
#           rmqtorture reads from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH);
#   podman  Debian's podman serving its Docker-compatible API on
#           unix://$RMQT_PODMAN_SOCK (`podman system service --time=0`, no
#           systemd needed), with the broker image loaded from Docker.
#
# Idempotent and quick when already done: a daemon that answers is left
# running, an image already loaded is not loaded again. Writes
# $RMQT_REMOTE_STATE/env (KEY=VALUE lines the tests read); the tests skip,
# naming this script, when that file is missing.
#
# Usage: scripts/remote-engines.sh [stop | ENGINE...]
#          ENGINE: ssh, tcp, tls or podman (default: all four); stop ends
#          the daemons this script started.
# Env:   RMQT_REMOTE_STATE  state folder (default /var/lib/rmqt-remote-engines:
#                           sshd's StrictModes refuses keys under a
#                           world-writable folder such as /tmp)
#        RMQT_SSH_PORT      sshd's port on 127.0.0.1 (default 22122)
#        RMQT_TCP_PORT      the TCP relay's port on 127.0.0.1 (default 22375)
#        RMQT_TLS_PORT      the TLS relay's port on 127.0.0.1 (default 22376):
#                           the Docker socket behind mutual TLS, with a CA,
#                           a server and a client certificate made here
#                           (DOCKER_CERT_PATH=$RMQT_REMOTE_STATE/tls)
#        RMQT_PODMAN_SOCK   Podman's API socket (default /run/rmqt-podman.sock)
#        RMQT_IMAGE         broker image to load into Podman
#                           (default rmqtorture/rabbitmq:4.0-trixie)
# Needs: root, apt (openssh-server, openssh-client, socat, openssl, podman), Docker
#        with the broker image (scripts/build-broker-image.sh).
set -euo pipefail

STATE=${RMQT_REMOTE_STATE:-/var/lib/rmqt-remote-engines}
SSH_PORT=${RMQT_SSH_PORT:-22122}
TCP_PORT=${RMQT_TCP_PORT:-22375}
TLS_PORT=${RMQT_TLS_PORT:-22376}
PODMAN_SOCK=${RMQT_PODMAN_SOCK:-/run/rmqt-podman.sock}
IMAGE=${RMQT_IMAGE:-rmqtorture/rabbitmq:4.0-trixie}

log() { printf 'remote-engines: %s\n' "$*" >&2; }

# alive PIDFILE: the process the file names is running.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop PIDFILE: ends the process the file names (one this script started).
stop() {
  if alive "$1"; then kill "$(cat "$1")"; fi
  rm -f "$1"
}

if [ "${1:-}" = stop ]; then
  stop "$STATE/sshd.pid"; stop "$STATE/socat.pid"; stop "$STATE/tls.pid"; stop "$STATE/podman.pid"
  rm -f "$STATE/env" # it would advertise engines that no longer run
  exit 0
fi

packages() {
  local need=()
  [ -x /usr/sbin/sshd ] || need+=(openssh-server)
  command -v ssh >/dev/null || need+=(openssh-client)
  command -v socat >/dev/null || need+=(socat)
  command -v openssl >/dev/null || need+=(openssl)
  command -v podman >/dev/null || need+=(podman)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    # policy-rc.d 101: the package's own sshd (all interfaces, port 22) is
    # not started by the install; only ours, on 127.0.0.1, runs.
    local prc=/usr/sbin/policy-rc.d made=0
    if [ ! -e $prc ]; then printf '#!/bin/sh\nexit 101\n' >$prc; chmod +x $prc; made=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    [ $made = 0 ] || rm -f $prc
  fi
}

setup_ssh() {
  [ -f "$STATE/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C rmqt-sshd -f "$STATE/ssh_host_ed25519_key"
  [ -f "$STATE/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C rmqt-client -f "$STATE/id_ed25519"
  cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
  printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1,2 "$STATE/ssh_host_ed25519_key.pub")" >"$STATE/known_hosts"
  cat >"$STATE/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $SSH_PORT
HostKey $STATE/ssh_host_ed25519_key
AuthorizedKeysFile $STATE/authorized_keys
PidFile $STATE/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
AllowTcpForwarding no
EOF
  cat >"$STATE/ssh_config" <<EOF
Host 127.0.0.1
  IdentityFile $STATE/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $STATE/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF
  mkdir -p "$STATE/bin"
  printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$STATE/ssh_config" >"$STATE/bin/ssh"
  chmod 755 "$STATE/bin/ssh"
  mkdir -p /run/sshd # privilege separation folder (systemd makes it otherwise)
  if ! alive "$STATE/sshd.pid"; then
    log "starting sshd on 127.0.0.1:$SSH_PORT"
    /usr/sbin/sshd -f "$STATE/sshd_config"
  fi
  "$STATE/bin/ssh" -p "$SSH_PORT" root@127.0.0.1 docker version --format '{{.Server.Version}}' >/dev/null
}

setup_tcp() {
  if ! alive "$STATE/socat.pid"; then
    log "relaying the Docker socket on 127.0.0.1:$TCP_PORT"
    setsid socat TCP-LISTEN:"$TCP_PORT",bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/var/run/docker.sock </dev/null >/dev/null 2>&1 &
    echo $! >"$STATE/socat.pid"
  fi
  for _ in $(seq 50); do
    DOCKER_HOST=tcp://127.0.0.1:$TCP_PORT docker version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "the TCP relay on 127.0.0.1:$TCP_PORT does not answer"; return 1
}

# setup_tls: the Docker socket behind mutual TLS on 127.0.0.1:$TLS_PORT,
# as a dockerd started with --tlsverify serves it: a CA of its own signs a
# server certificate for IP 127.0.0.1 and a client certificate, in the
# files the Docker CLI and client.FromEnv read from DOCKER_CERT_PATH
# (ca.pem, cert.pem, key.pem). A client without a certificate the CA
# signed is refused in the handshake.
setup_tls() {
  local d="$STATE/tls"
  if [ ! -s "$d/cert.pem" ]; then
    log "making a CA, a server and a client certificate in $d"
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=rmqtorture-test-ca \
      -keyout "$d/ca-key.pem" -out "$d/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$d/server-key.pem" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/server.ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca-key.pem" -CAcreateserial -days 3650 \
      -extfile "$d/server.ext" -out "$d/server-cert.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=rmqtorture-test-client -keyout "$d/key.pem" -out "$d/client.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$d/client.ext"
    openssl x509 -req -in "$d/client.csr" -CA "$d/ca.pem" -CAkey "$d/ca-key.pem" -CAcreateserial -days 3650 \
      -extfile "$d/client.ext" -out "$d/cert.pem" 2>/dev/null
    chmod 600 "$d"/*key.pem
  fi
  if ! alive "$STATE/tls.pid"; then
    log "relaying the Docker socket behind mutual TLS on 127.0.0.1:$TLS_PORT"
    setsid socat OPENSSL-LISTEN:"$TLS_PORT",bind=127.0.0.1,reuseaddr,fork,cert="$d/server-cert.pem",key="$d/server-key.pem",cafile="$d/ca.pem",verify=1 \
      UNIX-CONNECT:/var/run/docker.sock </dev/null >/dev/null 2>&1 &
    echo $! >"$STATE/tls.pid"
  fi
  for _ in $(seq 50); do
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$d docker version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "the TLS relay on 127.0.0.1:$TLS_PORT does not answer"; return 1
}

setup_podman() {
  # No systemd: cgroupfs, events and container logs in files rather than
  # the journal (`docker logs` reads the broker's log on a failed start).
  # Open files and processes capped at this shell's hard limits: Podman
  # asks for 1048576 and 4194304 by default, and where the service may not
  # raise its limits that far every container fails to start ("error
  # setting rlimit type 7" or "type 6").
  local nofile nproc conf=/etc/containers/containers.conf.d/rmqtorture.conf
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [ "$nofile" != unlimited ] || nofile=1048576
  # The service itself was seen running with a process limit of 32768
  # (below the shell's 96362), which no container can then exceed.
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  mkdir -p /etc/containers/containers.conf.d
  printf '[containers]\nlog_driver = "k8s-file"\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' "$nofile" "$nofile" "$nproc" "$nproc" >$conf.new
  if ! cmp -s $conf.new $conf; then
    mv $conf.new $conf
    stop "$STATE/podman.pid" # a running service keeps the old settings
  fi
  rm -f $conf.new
  if ! alive "$STATE/podman.pid"; then
    log "starting podman's API service on unix://$PODMAN_SOCK"
    rm -f "$PODMAN_SOCK"
    setsid podman system service --time=0 "unix://$PODMAN_SOCK" </dev/null >"$STATE/podman.log" 2>&1 &
    echo $! >"$STATE/podman.pid"
  fi
  for _ in $(seq 100); do
    [ -S "$PODMAN_SOCK" ] && DOCKER_HOST=unix://$PODMAN_SOCK docker version >/dev/null 2>&1 && break
    sleep 0.1
  done
  if ! podman image exists "$IMAGE"; then
    log "loading $IMAGE into podman"
    docker save "$IMAGE" | podman load -q >/dev/null
  fi
}

packages
mkdir -p "$STATE"
chmod 700 "$STATE"
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(ssh tcp tls podman)
for e in "${engines[@]}"; do
  case "$e" in
    ssh|tcp|tls|podman) "setup_$e" ;;
    *) log "unknown engine $e (ssh, tcp, tls, podman)"; exit 2 ;;
  esac
done
cat >"$STATE/env" <<EOF
RMQT_SSH_HOST=ssh://root@127.0.0.1:$SSH_PORT
RMQT_SSH_PATH=$STATE/bin
RMQT_TCP_HOST=tcp://127.0.0.1:$TCP_PORT
RMQT_TLS_HOST=tcp://127.0.0.1:$TLS_PORT
RMQT_TLS_CERT_PATH=$STATE/tls
RMQT_PODMAN_HOST=unix://$PODMAN_SOCK
EOF
log "ready: $STATE/env"
