#!/usr/bin/env bash
# Builds the real Kubernetes control plane (kube-apiserver, kube-controller-manager, kube-scheduler), the Go
# kubelet and kubectl from Debian bookworm's `kubernetes` source package, with Debian's golang-1.19 through
# upstream's own `make WHAT=...`, and installs etcd-server. Nothing is committed: the binaries are cached
# outside the repo under $KUBELET_TS_KUBE_CACHE/<source version>/bin, so a second run costs seconds.
#
# Prints KUBE_BIN_DIR=<dir> on stdout when done; messages go to stderr. Needs root (apt-get).
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/kube/lib.sh
. "$TOOLS_DIR/kube/lib.sh"

kts_require_root "apt-get, containerd and the Go kubelet need it"
kube_init_paths

# One build at a time: test-all.sh starts one in the background, and start.sh waits for it here.
mkdir -p "$(dirname "$KUBE_CACHE_DIR")"
exec 9>"$KUBE_CACHE_DIR.lock"
if ! flock -n 9; then
  kts_log "another build of kubernetes $KUBE_SOURCE_VERSION is running; waiting for it"
  flock 9
fi

if kube_binaries_present; then
  kts_log "cached build of kubernetes $KUBE_SOURCE_VERSION in $KUBE_BIN_DIR"
  kts_ensure_packages etcd-server
  echo "KUBE_BIN_DIR=$KUBE_BIN_DIR"
  exit 0
fi

# `apt-get source` needs a deb-src entry for the same archive apt already uses for bookworm.
add_deb_src() {
  local list=/etc/apt/sources.list.d/kubelet-ts-deb-src.sources
  [ -f "$list" ] && return 0
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || kts_die "cannot find the Debian archive apt uses (no debian.sources or sources.list entry for bookworm)"
  kts_log "adding a deb-src entry for $uri bookworm"
  cat > "$list" <<EOF
Types: deb-src
URIs: $uri
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  KTS_APT_UPDATED=""
}

add_deb_src
KTS_FORCE_APT_UPDATE=1 kts_ensure_packages golang-1.19-go rsync make dpkg-dev etcd-server \
  golang-github-modern-go-reflect2-dev ca-certificates

work="$KUBE_CACHE_DIR/build"
rm -rf "$work"
mkdir -p "$work"
start=$(date +%s)
kts_log "apt-get source kubernetes=$KUBE_SOURCE_VERSION into $work"
( cd "$work" && apt-get source -q "kubernetes=$KUBE_SOURCE_VERSION" </dev/null >&2 ) \
  || kts_die "apt-get source kubernetes=$KUBE_SOURCE_VERSION failed (is the deb-src entry reachable?)"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
[ -n "$src" ] && [ -f "$src/Makefile" ] || kts_die "no unpacked kubernetes source under $work"

# The vendored reflect2 v1.0.1 crashes under Go >= 1.18 (reflect.mapiterinit when json-iterator encodes a
# map); v1.0.2, from Debian, is the upstream fix.
reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
reflect2_vendor="$src/vendor/github.com/modern-go/reflect2"
[ -d "$reflect2_src" ] || kts_die "missing $reflect2_src (golang-github-modern-go-reflect2-dev)"
[ -d "$reflect2_vendor" ] || kts_die "missing $reflect2_vendor in the kubernetes source"
rm -f "$reflect2_vendor"/*.go
cp "$reflect2_src"/*.go "$reflect2_vendor"/
rm -f "$reflect2_vendor"/*_test.go
kts_log "vendor/github.com/modern-go/reflect2 replaced by Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"

kts_log "make WHAT=\"$KUBE_WHAT\" with $(/usr/lib/go-1.19/bin/go version) (about 8-9 minutes on 2 cores)"
(
  cd "$src"
  export PATH="/usr/lib/go-1.19/bin:$PATH"
  export GOFLAGS="" GO111MODULE=off GOCACHE="$KUBE_CACHE_DIR/gocache" GOTOOLCHAIN=local
  make WHAT="$KUBE_WHAT" </dev/null >&2
) || kts_die "make WHAT=\"$KUBE_WHAT\" failed (output above)"

out="$src/_output/bin"
[ -d "$out" ] || out="$src/_output/local/bin/linux/amd64"
mkdir -p "$KUBE_BIN_DIR.tmp"
for b in $KUBE_BINARIES; do
  [ -x "$out/$b" ] || kts_die "make did not produce $out/$b"
  cp "$out/$b" "$KUBE_BIN_DIR.tmp/$b"
done
rm -rf "$KUBE_BIN_DIR"
mv "$KUBE_BIN_DIR.tmp" "$KUBE_BIN_DIR"
rm -rf "$work" "$KUBE_CACHE_DIR/gocache"
kts_log "built $KUBE_BINARIES in $(( $(date +%s) - start )) s into $KUBE_BIN_DIR"
echo "KUBE_BIN_DIR=$KUBE_BIN_DIR"
