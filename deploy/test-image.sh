#!/usr/bin/env bash
# deploy/test-image.sh (make image-test): builds the repository's Dockerfile,
# unchanged, in a real container engine, with the classic builder and with
# BuildKit, and runs each image the way deploy/README.md says to:
# --read-only --cap-drop ALL. It checks /-/healthy, /-/ready, /metrics
# (llmprobe_ series) and / answer; the process runs as 65532; the default
# command logs that it probes the built-in simulator; the image's HEALTHCHECK
# turns healthy; docker stop (SIGTERM) exits 0 promptly; a scheduled sweep
# succeeds on the read-only root; a rotated API key file is used without a
# restart. It prints the build times and the image size.
#
# The engine: the one DOCKER_HOST (or the default socket) names when it
# answers; otherwise Debian's docker.io (installed with apt-get when absent)
# started here as root with its own data root, exec root and socket under
# $LLMPROBE_IMAGE_TEST_DIR, no iptables and no bridge (containers use the
# host's network, each on a free port, or none), and stopped by its PID when
# the script ends.
#
# Base images: the Dockerfile's pinned golang and distroless images when a
# registry answers; otherwise local stand-ins made below (make_go_base,
# make_runtime_base) and named with build arguments (GO_IMAGE,
# RUNTIME_IMAGE), so the Dockerfile is built as it is.
#
# Usage: deploy/test-image.sh [--clean]
#   --clean  start from an empty engine data root and no cached base root
#            file systems (what CI does); without it a later run reuses the
#            layer cache of the engine started here.
# Environment: LLMPROBE_IMAGE_TEST_DIR (default /var/tmp/llmprobe-image-test),
# LLMPROBE_GO_ROOTFS=busybox|debootstrap (the build stage's stand-in, below).
set -Eeuo pipefail
cd "$(dirname "$0")/.."

WORK=${LLMPROBE_IMAGE_TEST_DIR:-/var/tmp/llmprobe-image-test}
GO_ROOTFS=${LLMPROBE_GO_ROOTFS:-busybox}
CLEAN=0
for a in "$@"; do
  case $a in
    --clean) CLEAN=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-image.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done
case $GO_ROOTFS in busybox|debootstrap) ;; *)
  echo "test-image.sh: LLMPROBE_GO_ROOTFS=$GO_ROOTFS: want busybox or debootstrap" >&2; exit 2 ;;
esac

# Bounds of every wait (seconds).
readonly ENGINE_START_LIMIT=120 READY_LIMIT=60 HEALTHY_LIMIT=60 STOP_LIMIT=10 SWEEP_LIMIT=240

RUN_ID=llmprobe-image-test-$$
IMAGE_PREFIX=llmprobe-image-test
LOCAL_GO_IMAGE=llmprobe-local/golang:stand-in
LOCAL_RUNTIME_IMAGE=llmprobe-local/distroless-static:stand-in
DOCKERD_PID=
BUILD_PID=
OWN_ENGINE=0
CONTAINERS=()
IMAGES=()
T0=$(date +%s)

say() { printf '[%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

# unmount_work: unmounts whatever is still mounted under $WORK (a stopped
# dockerd leaves its default network namespace's bind mount), deepest first.
unmount_work() {
  local m
  for m in $(findmnt -rn -o TARGET | grep -F "$WORK/" | sort -r || true); do
    umount "$m" || say "could not unmount $m"
  done
}

cleanup() {
  local rc=$?
  trap - ERR
  set +e
  if [ -n "$BUILD_PID" ] && kill -0 "$BUILD_PID" 2>/dev/null; then
    say "interrupted: stopping the build client (PID $BUILD_PID)"
    kill -TERM "$BUILD_PID"; wait "$BUILD_PID" 2>/dev/null
  fi
  for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1; done
  if [ "$OWN_ENGINE" = 0 ]; then
    # Someone else's engine: leave it as found, less what was built here.
    for i in "${IMAGES[@]}"; do docker rmi -f "$i" >/dev/null 2>&1; done
  fi
  if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    say "stopping the engine started here (dockerd PID $DOCKERD_PID)"
    kill -TERM "$DOCKERD_PID"
    for _ in $(seq 300); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$DOCKERD_PID" 2>/dev/null; then
      say "dockerd did not stop within 30 s: KILL"; kill -KILL "$DOCKERD_PID"; sleep 1
    fi
    # What the stopped engine left mounted under its own directories (its
    # default network namespace's bind mount stays): unmounted, deepest first.
    unmount_work
    # --clean: leave no data root behind either (CI).
    if [ "$CLEAN" = 1 ]; then say "--clean: removing $WORK"; rm -rf "$WORK"; fi
  fi
  [ -n "${BUILD_DIR:-}" ] && rm -rf "$BUILD_DIR"
  if [ $rc = 0 ]; then say "image test OK"; else say "image test FAILED (exit $rc)"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A command that fails outside a check says where (set -e would exit silently).
trap 'say "FAIL: line $LINENO: $BASH_COMMAND"' ERR

# ---- the engine --------------------------------------------------------------

engine_answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_engine() {
  if ! command -v dockerd >/dev/null; then
    [ "$(id -u)" = 0 ] || fail "no container engine answers and dockerd is not installed: run as root to install Debian's docker.io"
    say "installing Debian's docker.io (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  [ "$(id -u)" = 0 ] || fail "starting dockerd needs root"
  local old
  old=$(cat "$WORK/dockerd.pid" 2>/dev/null || true)
  if [ -n "$old" ] && kill -0 "$old" 2>/dev/null; then
    fail "a dockerd (PID $old) still runs on $WORK (an interrupted run?): stop it first (kill $old)"
  fi
  unmount_work
  if [ "$CLEAN" = 1 ] && [ -d "$WORK" ]; then
    say "--clean: removing $WORK"
    rm -rf "$WORK"
  fi
  mkdir -p "$WORK/data" "$WORK/exec"
  rm -f "$WORK/docker.sock"
  export DOCKER_HOST="unix://$WORK/docker.sock"
  # No iptables and no bridge: this machine has neither to give; containers
  # and builds use --network host (or none).
  dockerd --iptables=false --bridge=none \
    --data-root "$WORK/data" --exec-root "$WORK/exec" \
    --pidfile "$WORK/dockerd.pid" --host "$DOCKER_HOST" \
    >"$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  OWN_ENGINE=1
  say "started dockerd (PID $DOCKERD_PID, data root $WORK/data, log $WORK/dockerd.log)"
  local deadline=$(( $(date +%s) + ENGINE_START_LIMIT ))
  until [ -S "$WORK/docker.sock" ] && engine_answers; do
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -20 "$WORK/dockerd.log"; fail "dockerd exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -20 "$WORK/dockerd.log"; fail "dockerd's socket did not answer within ${ENGINE_START_LIMIT}s"; }
    sleep 0.2
  done
}

if [ -n "${DOCKER_HOST:-}" ] || [ -S /var/run/docker.sock ]; then
  if command -v docker >/dev/null && engine_answers; then
    say "using the engine that answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}"
    [ "$CLEAN" = 0 ] || say "--clean: ignored for an engine not started here"
  else
    unset DOCKER_HOST
  fi
fi
if ! command -v docker >/dev/null || ! engine_answers; then
  start_engine
fi
say "engine: $(docker version --format 'server {{.Server.Version}}, client {{.Client.Version}}')"

# ---- base images ---------------------------------------------------------------

# The pins, read from the Dockerfile itself (its global ARG defaults).
pin() { sed -n "s/^ARG $1=//p" Dockerfile; }
GO_PIN=$(pin GO_IMAGE)
RUNTIME_PIN=$(pin RUNTIME_IMAGE)
[ -n "$GO_PIN" ] && [ -n "$RUNTIME_PIN" ] || fail "the Dockerfile has no ARG GO_IMAGE= / ARG RUNTIME_IMAGE= pins"
GO_VERSION=$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)

# make_go_base: the build stage's stand-in for golang:$GO_VERSION. The
# official image is Debian with the Go toolchain in /usr/local/go; what the
# Dockerfile's build stage uses of it is /bin/sh, the Go toolchain and CA
# certificates (go mod download fetches modules over HTTPS). The root file
# system is one of:
#   busybox (default, seconds): Debian's busybox-static package, fetched from
#     Debian's apt mirror with apt-get download, gives /bin/sh and the
#     utilities; plus Debian's CA bundle of this machine
#     (/etc/ssl/certs/ca-certificates.crt) and /etc/passwd, /etc/group.
#   debootstrap (minutes): debootstrap --variant=minbase
#     --include=ca-certificates bookworm from Debian's apt mirror, the
#     official image's own base.
# To it the Go toolchain of this machine ($(go env GOROOT) -> /usr/local/go),
# which must be go.mod's version, as the pinned image's is; then
# `docker import` with the official image's ENV (PATH, GOLANG_VERSION,
# GOTOOLCHAIN=local, GOPATH) and WORKDIR, tagged $LOCAL_GO_IMAGE.
make_go_base() {
  local goroot rootfs cache="$WORK/base"
  command -v go >/dev/null || fail "no go on PATH to make the build stage's stand-in"
  goroot=$(go env GOROOT)
  [ "$(go env GOVERSION)" = "go$GO_VERSION" ] || fail "this machine's Go is $(go env GOVERSION), go.mod wants go$GO_VERSION: the stand-in for golang:$GO_VERSION needs that toolchain"
  mkdir -p "$cache"
  rootfs="$cache/go-$GO_ROOTFS"
  if [ ! -f "$rootfs.done" ]; then
    rm -rf "$rootfs"; mkdir -p "$rootfs"
    case $GO_ROOTFS in
      busybox)
        (cd "$cache" && rm -f busybox-static_*.deb && apt-get download -qq busybox-static 2>/dev/null) || fail "apt-get download busybox-static"
        dpkg-deb -x "$cache"/busybox-static_*.deb "$rootfs"
        mkdir -p "$rootfs/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/root" "$rootfs/usr/bin" "$rootfs/usr/sbin" "$rootfs/sbin"
        chmod 1777 "$rootfs/tmp"
        for app in $("$rootfs/bin/busybox" --list); do
          [ -e "$rootfs/bin/$app" ] || ln -s busybox "$rootfs/bin/$app"
        done
        cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
        printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
        printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
        ;;
      debootstrap)
        command -v debootstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
        debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
          || { tail -20 "$cache/debootstrap.log"; fail "debootstrap"; }
        ;;
    esac
    touch "$rootfs.done"
  fi
  say "importing the build stage's stand-in ($GO_ROOTFS root file system + $goroot as /usr/local/go) as $LOCAL_GO_IMAGE"
  # One tar stream: the root file system, then the toolchain as usr/local/go.
  local base
  base=$(basename "$goroot")
  mkdir -p "$rootfs/usr/local"
  tar --numeric-owner -cf - -C "$rootfs" . \
    -C "$(dirname "$goroot")" --transform "s,^$base\(/\|\$\),usr/local/go\1," "$base" \
    | docker import \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV GOLANG_VERSION=$GO_VERSION" \
    --change 'ENV GOTOOLCHAIN=local' \
    --change 'ENV GOPATH=/go' \
    --change 'WORKDIR /go' \
    --change 'CMD ["/bin/sh"]' \
    - "$LOCAL_GO_IMAGE" >/dev/null
}

# make_runtime_base: the final stage's stand-in for
# gcr.io/distroless/static-debian12:nonroot, made as distroless makes it (its
# static image: no shell, no package manager): /etc/passwd and /etc/group with
# root, nobody and nonroot (65532), /home/nonroot owned by 65532, /tmp
# (1777), Debian's CA bundle (ca-certificates) and time zone data (tzdata)
# of this machine, /etc/nsswitch.conf and /etc/os-release; `docker import`ed
# with distroless' USER 65532, WORKDIR /home/nonroot, PATH and SSL_CERT_FILE,
# tagged $LOCAL_RUNTIME_IMAGE.
make_runtime_base() {
  local r="$WORK/base/runtime"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && [ -d /usr/share/zoneinfo ] \
    || fail "the runtime stand-in needs Debian's ca-certificates and tzdata installed here"
  rm -rf "$r"; mkdir -p "$r/etc/ssl/certs" "$r/usr/share" "$r/home/nonroot" "$r/root" "$r/tmp" "$r/bin"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$r/etc/group"
  printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
  printf 'PRETTY_NAME="Distroless stand-in (llmprobe deploy/test-image.sh)"\nID=debian\nVERSION_ID="12"\n' >"$r/etc/os-release"
  cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/"
  cp -a /usr/share/zoneinfo "$r/usr/share/"
  chown 65532:65532 "$r/home/nonroot"; chmod 700 "$r/home/nonroot" "$r/root"; chmod 1777 "$r/tmp"
  say "importing the final stage's stand-in (nonroot 65532, CA bundle, tzdata) as $LOCAL_RUNTIME_IMAGE"
  tar --numeric-owner -C "$r" -cf - . | docker import \
    --change 'USER 65532' \
    --change 'WORKDIR /home/nonroot' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    - "$LOCAL_RUNTIME_IMAGE" >/dev/null
  rm -rf "$r"
}

BASE_ARGS=()
if timeout 60 docker pull -q "$GO_PIN" >/dev/null 2>&1 && timeout 60 docker pull -q "$RUNTIME_PIN" >/dev/null 2>&1; then
  say "a registry answers: building on the pinned $GO_PIN and $RUNTIME_PIN"
else
  say "no registry answers for the pinned base images: making local stand-ins"
  make_go_base
  make_runtime_base
  BASE_ARGS=(--build-arg "GO_IMAGE=$LOCAL_GO_IMAGE" --build-arg "RUNTIME_IMAGE=$LOCAL_RUNTIME_IMAGE")
  IMAGES+=("$LOCAL_GO_IMAGE" "$LOCAL_RUNTIME_IMAGE")
fi

# ---- builds ----------------------------------------------------------------------

VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH=$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
VERSION_ARGS=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION"
  --build-arg "BRANCH=$BRANCH" --build-arg "BUILD_DATE=$(date -u +%Y%m%d-%H:%M:%S)")
BUILD_DIR=$(mktemp -d)

# build NAME CMD...: runs one build of the repository root, timed.
build() {
  local name=$1; shift
  local tag="$IMAGE_PREFIX:$name" start end
  say "building $tag ($name): $*"
  start=$(date +%s)
  # In the background and waited for, so that INT or TERM stops the script
  # (and, through cleanup, the build) at once rather than after the build.
  "$@" --network host -t "$tag" "${BASE_ARGS[@]}" "${VERSION_ARGS[@]}" . >"$BUILD_DIR/$name.log" 2>&1 &
  BUILD_PID=$!
  if ! wait "$BUILD_PID"; then
    BUILD_PID=
    tail -30 "$BUILD_DIR/$name.log"
    fail "the $name build failed"
  fi
  BUILD_PID=
  end=$(date +%s)
  IMAGES+=("$tag")
  BUILT+=("$name")
  BUILD_SECONDS[$name]=$(( end - start ))
  say "built $tag in $(( end - start ))s, $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1/1e6}')"
}
declare -A BUILD_SECONDS
BUILT=()

build legacy env DOCKER_BUILDKIT=0 docker build

# BuildKit: the buildx plugin of any docker CLI here, or a CLI from before
# Docker 23 (Debian 12's docker.io is 20.10), which drives the engine's own
# BuildKit itself with DOCKER_BUILDKIT=1 (a later CLI without buildx refuses).
BUILDKIT=()
for cli in $(type -ap docker); do
  if "$cli" buildx version >/dev/null 2>&1; then BUILDKIT=("$cli" buildx build --load); break; fi
  major=$("$cli" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)
  if [ -n "$major" ] && [ "$major" -lt 23 ]; then BUILDKIT=(env DOCKER_BUILDKIT=1 "$cli" build --progress plain); break; fi
done
if [ ${#BUILDKIT[@]} = 0 ]; then
  say "BuildKit: no docker CLI here drives it (no buildx plugin, no CLI before 23): built with the classic builder only"
else
  build buildkit "${BUILDKIT[@]}"
fi

# ---- runs ------------------------------------------------------------------------

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || { local p; while :; do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; }
}

# until_within LIMIT WHAT CMD...: polls CMD (observable state) until it
# succeeds, at most LIMIT seconds.
until_within() {
  local limit=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

http_ok() { curl -fsS --max-time 5 -o /dev/null "$1"; }
# successes BASE: the successful requests of target "keyed" on BASE/metrics;
# more_successes BASE N: whether there are more than N.
successes() {
  curl -fsS --max-time 5 "$1/metrics" \
    | awk '/^llmprobe_requests_total\{/ && /outcome="success"/ && /target="keyed"/ {s += $NF} END {print s + 0}'
}
more_successes() { [ "$(successes "$1")" -gt "$2" ]; }
health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$1"; }
is_healthy() { [ "$(health "$1")" = healthy ]; }

# stop_check NAME: docker stop sends SIGTERM; the container must exit 0
# within STOP_LIMIT seconds (docker stop would KILL after 2*STOP_LIMIT).
stop_check() {
  local c=$1 start end code
  start=$(date +%s%N)
  docker stop -t $(( 2 * STOP_LIMIT )) "$c" >/dev/null
  end=$(date +%s%N)
  code=$(docker inspect -f '{{.State.ExitCode}}' "$c")
  local ms=$(( (end - start) / 1000000 ))
  [ "$code" = 0 ] || { docker logs --tail 20 "$c" 2>&1; fail "$c: exit $code after SIGTERM, want 0"; }
  [ "$ms" -le $(( STOP_LIMIT * 1000 )) ] || fail "$c: SIGTERM took ${ms}ms to exit, want at most ${STOP_LIMIT}s"
  say "  SIGTERM (docker stop): exit 0 in ${ms}ms"
}

check_image() {
  local name=$1 tag="$IMAGE_PREFIX:$1"
  say "checking $tag"

  # The image's configuration.
  [ "$(docker image inspect -f '{{.Config.User}}' "$tag")" = 65532:65532 ] || fail "$tag: USER is not 65532:65532"
  local hc
  hc=$(docker image inspect -f '{{json .Config.Healthcheck.Test}}' "$tag")
  [ "$hc" = '["CMD","/bin/llmprobe","healthcheck"]' ] || fail "$tag: HEALTHCHECK is $hc"

  # 1. The defaults as shipped (ENTRYPOINT, CMD, HEALTHCHECK, port 9741), on
  # a network of its own (none: loopback only, so 9741 is free there). The
  # health interval is shortened so that the check takes seconds; the
  # command is the image's.
  local d="$RUN_ID-$name-default"
  CONTAINERS+=("$d")
  docker run -d --name "$d" --read-only --cap-drop ALL --network none \
    --health-interval 1s --health-start-period 30s "$tag" >/dev/null
  until_within "$HEALTHY_LIMIT" healthy is_healthy "$d" \
    || { docker logs --tail 20 "$d" 2>&1; docker inspect -f '{{json .State.Health}}' "$d"; fail "$d: HEALTHCHECK not healthy within ${HEALTHY_LIMIT}s (state $(health "$d"))"; }
  say "  HEALTHCHECK (llmprobe healthcheck, default command): healthy"
  docker logs "$d" 2>&1 | grep -q 'probing the BUILT-IN SIMULATOR' \
    || { docker logs --tail 20 "$d" 2>&1; fail "$d: the default command does not log that it probes the simulator"; }
  say "  default command: logs that it probes the built-in simulator"
  local pid uid
  pid=$(docker inspect -f '{{.State.Pid}}' "$d")
  uid=$(awk '/^Uid:/ {print $2 ":" $3 ":" $4 ":" $5}' "/proc/$pid/status")
  [ "$uid" = 65532:65532:65532:65532 ] || fail "$d: process UIDs $uid, want 65532 (real:effective:saved:fs)"
  say "  process user: UID 65532 (/proc/$pid/status Uid $uid), read-only root, no capabilities"
  stop_check "$d"

  # 2. The web endpoints from the host: host network, a free port.
  local port h base
  port=$(free_port)
  h="$RUN_ID-$name-web"
  base="http://127.0.0.1:$port"
  CONTAINERS+=("$h")
  # Another port through the environment alone: serve and the image's own
  # HEALTHCHECK (exec form, no shell) both read it.
  docker run -d --name "$h" --read-only --cap-drop ALL --network host \
    -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$port" --health-interval 1s \
    "$tag" serve >/dev/null
  until_within "$READY_LIMIT" "ready" http_ok "$base/-/ready" \
    || { docker logs --tail 20 "$h" 2>&1; fail "$h: $base/-/ready not 200 within ${READY_LIMIT}s"; }
  http_ok "$base/-/healthy" || fail "$h: $base/-/healthy"
  say "  /-/healthy, /-/ready: 200"
  until_within "$HEALTHY_LIMIT" healthy is_healthy "$h" \
    || { docker inspect -f '{{json .State.Health}}' "$h"; fail "$h: HEALTHCHECK on port $port (LLMPROBE_WEB_LISTEN_ADDRESS) not healthy (state $(health "$h"))"; }
  say "  HEALTHCHECK on port $port from LLMPROBE_WEB_LISTEN_ADDRESS: healthy"
  until_within "$READY_LIMIT" "metrics" sh -c "curl -fsS --max-time 5 '$base/metrics' | grep -q '^llmprobe_requests_total{'" \
    || fail "$h: $base/metrics has no llmprobe_requests_total series within ${READY_LIMIT}s"
  say "  /metrics: $(curl -fsS --max-time 5 "$base/metrics" | grep -c '^llmprobe_') llmprobe_ samples"
  curl -fsS --max-time 5 "$base/" | grep -qi '<html' || fail "$h: $base/ is not the status page"
  say "  /: the status page"
  local rss
  rss=$(awk '/^VmRSS:/ {printf "%.1f MiB", $2/1024}' "/proc/$(docker inspect -f '{{.State.Pid}}' "$h")/status")
  say "  RSS: $rss"
  stop_check "$h"

  # 3. A scheduled sweep as shipped: the simulator image on its own port
  # (healthy through LLMPROBE_WEB_LISTEN_ADDRESS and /health), and serve on
  # a read-only root with a config that sweeps it every minute; the run
  # directory goes to the image's volume (LLMPROBE_SWEEPS_DIR).
  local sp sim sv cfgdir
  sp=$(free_port)
  sim="$RUN_ID-$name-sim"
  CONTAINERS+=("$sim")
  docker run -d --name "$sim" --read-only --cap-drop ALL --network host \
    -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$sp" --health-interval 1s "$tag" simulate >/dev/null
  until_within "$HEALTHY_LIMIT" healthy is_healthy "$sim" \
    || { docker logs --tail 20 "$sim" 2>&1; fail "$sim: the simulator's HEALTHCHECK not healthy (state $(health "$sim"))"; }
  say "  simulate on port $sp: healthy"
  cfgdir=$(mktemp -d)
  cat >"$cfgdir/llmprobe.yml" <<YAML
targets:
  - name: sim
    base_url: http://127.0.0.1:$sp
    probes:
      - name: p
        rate: 0.5
    sweeps:
      - name: minutely
        every: 1m
        rates: [2, 4]
        num_prompts: 10
        input_len: 32
        output_len: 4
YAML
  chmod -R a+rX "$cfgdir"
  port=$(free_port)
  sv="$RUN_ID-$name-sweeps"
  base="http://127.0.0.1:$port"
  CONTAINERS+=("$sv")
  docker run -d --name "$sv" --read-only --cap-drop ALL --network host \
    -v "$cfgdir/llmprobe.yml:/etc/llmprobe/llmprobe.yml:ro" -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$port" \
    --health-interval 1s "$tag" serve --config.file=/etc/llmprobe/llmprobe.yml >/dev/null
  until_within "$SWEEP_LIMIT" "a scheduled sweep" sh -c \
    "curl -fsS --max-time 5 '$base/metrics' | grep -q '^llmprobe_sweep_runs_total{result=\"success\",sweep=\"minutely\",target=\"sim\"} 1'" \
    || { docker logs --tail 30 "$sv" 2>&1; fail "$sv: no successful scheduled sweep within ${SWEEP_LIMIT}s (read-only root, the image's sweeps volume)"; }
  is_healthy "$sv" || fail "$sv: not healthy (state $(health "$sv"))"
  say "  scheduled sweep on a read-only root: success (run directory in the image's /var/lib/llmprobe volume); healthy"
  stop_check "$sv"
  stop_check "$sim"
  rm -rf "$cfgdir"

  # 4. A rotated API key is used without a restart or SIGHUP: the simulator
  # requires key 1; serve reads it from a mounted directory (as a Kubernetes
  # Secret volume: the file is replaced, not rewritten); then the simulator
  # is replaced by one requiring key 2 and the file swapped atomically.
  # Success must resume within a probe interval plus the secret poll (5 s),
  # in the same container (restart count 0).
  local keydir rp rsim rsv
  keydir=$(mktemp -d)
  rp=$(free_port)
  printf 'rotation-key-one\n' >"$keydir/key"
  chmod -R a+rX "$keydir"
  rsim="$RUN_ID-$name-keysim1"
  CONTAINERS+=("$rsim")
  docker run -d --name "$rsim" --read-only --cap-drop ALL --network host \
    -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$rp" "$tag" simulate --api-key=rotation-key-one >/dev/null
  until_within "$READY_LIMIT" "simulator" http_ok "http://127.0.0.1:$rp/health" || fail "$rsim: not answering"
  cfgdir=$(mktemp -d)
  cat >"$cfgdir/llmprobe.yml" <<YAML
targets:
  - name: keyed
    base_url: http://127.0.0.1:$rp
    api_key_file: /etc/llmprobe/keys/key
    probes:
      - name: p
        rate: 2
YAML
  chmod -R a+rX "$cfgdir"
  port=$(free_port)
  rsv="$RUN_ID-$name-rotation"
  base="http://127.0.0.1:$port"
  CONTAINERS+=("$rsv")
  docker run -d --name "$rsv" --read-only --cap-drop ALL --network host \
    -v "$cfgdir/llmprobe.yml:/etc/llmprobe/llmprobe.yml:ro" -v "$keydir:/etc/llmprobe/keys:ro" \
    -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$port" "$tag" serve --config.file=/etc/llmprobe/llmprobe.yml >/dev/null
  until_within "$READY_LIMIT" "keyed successes" more_successes "$base" 0 \
    || { docker logs --tail 20 "$rsv" 2>&1; fail "$rsv: no successful request with key 1"; }
  stop_check "$rsim"
  rsim="$RUN_ID-$name-keysim2"
  CONTAINERS+=("$rsim")
  docker run -d --name "$rsim" --read-only --cap-drop ALL --network host \
    -e LLMPROBE_WEB_LISTEN_ADDRESS="127.0.0.1:$rp" "$tag" simulate --api-key=rotation-key-two >/dev/null
  until_within "$READY_LIMIT" "simulator 2" http_ok "http://127.0.0.1:$rp/health" || fail "$rsim: not answering"
  local before rotated
  before=$(successes "$base")
  printf 'rotation-key-two\n' >"$keydir/key.new" && chmod a+r "$keydir/key.new" && mv "$keydir/key.new" "$keydir/key"
  rotated=$(date +%s%N)
  until_within 15 "success with key 2" more_successes "$base" "$before" \
    || { docker logs --tail 20 "$rsv" 2>&1; fail "$rsv: no success with the rotated key within 15s (no restart, no SIGHUP)"; }
  [ "$(docker inspect -f '{{.RestartCount}}' "$rsv")" = 0 ] || fail "$rsv: restarted"
  say "  rotated API key used after $(( ($(date +%s%N) - rotated) / 1000000 ))ms, same container, no SIGHUP"
  ! docker logs "$rsv" 2>&1 | grep -q 'rotation-key-' || fail "$rsv: a key appears in the log"
  stop_check "$rsv"
  stop_check "$rsim"
  rm -rf "$cfgdir" "$keydir"
}

for name in "${BUILT[@]}"; do check_image "$name"; done

say "summary:"
for name in "${BUILT[@]}"; do
  say "  $name build: ${BUILD_SECONDS[$name]}s, image $IMAGE_PREFIX:$name $(docker image inspect -f '{{.Size}}' "$IMAGE_PREFIX:$name" | awk '{printf "%.1f MB (%d bytes)", $1/1e6, $1}')"
done
