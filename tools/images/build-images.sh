#!/usr/bin/env bash
# Build, fully offline, two OCI image-layout tarballs that `ctr images import` accepts:
#   OUT_DIR/busybox.tar  ($BUSYBOX_IMAGE from images.env): /bin/busybox (Debian busybox-static)
#                        plus applet symlinks, /etc/passwd, /etc/group, /tmp; Cmd ["sh"]
#   OUT_DIR/pause.tar    ($PAUSE_IMAGE): a static /pause built from pause/pause.c; Entrypoint ["/pause"]
# The image name is carried by the io.containerd.image.name annotation of the index entry
# (org.opencontainers.image.ref.name holds the tag). Output is reproducible (fixed mtimes,
# owners, order; gzip -n) and cached: nothing is rebuilt when both tarballs are newer than
# this script, images.env and pause.c. Set KUBELET_TS_IMAGES_FORCE=1 to rebuild.
# Needs: bash, tar (GNU), gzip, sha256sum, gcc + libc6-dev (static), busybox-static.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT_PATH="$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=images.env
. "$SCRIPT_DIR/images.env"

die() { echo "build-images: error: $*" >&2; exit 1; }
log() { echo "build-images: $*" >&2; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
OUT_DIR=$1
mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

BUSYBOX_BIN=${KUBELET_TS_BUSYBOX_BIN:-/bin/busybox}
PAUSE_SRC="$SCRIPT_DIR/pause/pause.c"
EPOCH=${SOURCE_DATE_EPOCH:-0}
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# ---- cache check -------------------------------------------------------------------------
up_to_date() {
  local t
  for t in "$OUT_DIR/busybox.tar" "$OUT_DIR/pause.tar"; do
    [ -f "$t" ] || return 1
    [ "$t" -nt "$SCRIPT_PATH" ] && [ "$t" -nt "$SCRIPT_DIR/images.env" ] && [ "$t" -nt "$PAUSE_SRC" ] || return 1
  done
}
if [ "${KUBELET_TS_IMAGES_FORCE:-0}" != 1 ] && up_to_date; then
  log "up to date: $OUT_DIR/busybox.tar $OUT_DIR/pause.tar"
  exit 0
fi

# ---- prerequisites ------------------------------------------------------------------------
for tool in tar gzip sha256sum gcc stat date; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (Debian: apt-get install tar gzip coreutils gcc libc6-dev)"
done
tar --version 2>/dev/null | grep -q 'GNU tar' || die "GNU tar is required (for --sort/--mtime/--owner)"
[ -x "$BUSYBOX_BIN" ] || die "$BUSYBOX_BIN not found (Debian: apt-get install busybox-static)"
if command -v readelf >/dev/null 2>&1 && readelf -l "$BUSYBOX_BIN" 2>/dev/null | grep -q 'INTERP'; then
  die "$BUSYBOX_BIN is dynamically linked; install Debian's busybox-static (it replaces busybox)"
fi
[ -f "$PAUSE_SRC" ] || die "missing $PAUSE_SRC"

# dpkg architecture -> OCI platform
arch_raw=$(dpkg --print-architecture 2>/dev/null || uname -m)
VARIANT=
case "$arch_raw" in
  amd64|x86_64) ARCH=amd64 ;;
  arm64|aarch64) ARCH=arm64; VARIANT=v8 ;;
  armhf|armv7l) ARCH=arm; VARIANT=v7 ;;
  armel) ARCH=arm; VARIANT=v5 ;;
  i386|i686) ARCH=386 ;;
  ppc64el|ppc64le) ARCH=ppc64le ;;
  s390x) ARCH=s390x ;;
  riscv64) ARCH=riscv64 ;;
  mips64el) ARCH=mips64le ;;
  *) die "unsupported architecture '$arch_raw'" ;;
esac
PLATFORM_JSON="\"architecture\":\"$ARCH\",\"os\":\"linux\""
[ -n "$VARIANT" ] && PLATFORM_JSON="$PLATFORM_JSON,\"variant\":\"$VARIANT\""

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubelet-ts-images.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

TAR_REPRO=(--sort=name "--mtime=@$EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu)
sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# write_blob LAYOUT FILE -> prints digest hex; moves FILE into LAYOUT/blobs/sha256/
write_blob() {
  local layout=$1 file=$2 d
  d=$(sha "$file")
  mv -f "$file" "$layout/blobs/sha256/$d"
  echo "$d"
}

# build_image NAME ROOTFS_DIR CONFIG_JSON_FRAGMENT OUT_TAR
build_image() {
  local name=$1 rootfs=$2 cfg=$3 out=$4
  local tag=${name##*:}
  local layout="$WORK/layout-$(basename "$out" .tar)"
  mkdir -p "$layout/blobs/sha256"

  # layer: uncompressed tar for diff_id, gzip -n for the blob
  local layer="$WORK/layer.tar"
  tar "${TAR_REPRO[@]}" -C "$rootfs" -cf "$layer" . || die "tar of $rootfs failed"
  local diff_id; diff_id=$(sha "$layer")
  gzip -n -9 -c "$layer" > "$layer.gz"
  rm -f "$layer"
  local layer_size; layer_size=$(size "$layer.gz")
  local layer_digest; layer_digest=$(write_blob "$layout" "$layer.gz")

  local config="$WORK/config.json"
  printf '{"architecture":"%s",%s"os":"linux","created":"%s","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"%s","created_by":"kubelet-ts tools/images/build-images.sh"}]}' \
    "$ARCH" "${VARIANT:+\"variant\":\"$VARIANT\",}" "$CREATED" "$cfg" "$diff_id" "$CREATED" > "$config"
  local config_size; config_size=$(size "$config")
  local config_digest; config_digest=$(write_blob "$layout" "$config")

  local manifest="$WORK/manifest.json"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$config_digest" "$config_size" "$layer_digest" "$layer_size" > "$manifest"
  local manifest_size; manifest_size=$(size "$manifest")
  local manifest_digest; manifest_digest=$(write_blob "$layout" "$manifest")

  printf '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{%s},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest_digest" "$manifest_size" "$PLATFORM_JSON" "$name" "$tag" > "$layout/index.json"

  tar "${TAR_REPRO[@]}" -C "$layout" -cf "$out.tmp" oci-layout index.json blobs || die "tar of $layout failed"
  mv -f "$out.tmp" "$out"
  log "built $out ($name, manifest sha256:$manifest_digest)"
}

ENV_PATH='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

# ---- busybox ------------------------------------------------------------------------------
umask 022
BB="$WORK/busybox-rootfs"
mkdir -p "$BB"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,var,proc,sys,dev,tmp}
install -m 0755 "$BUSYBOX_BIN" "$BB/bin/busybox"
applets=$("$BB/bin/busybox" --list-full) || die "$BUSYBOX_BIN --list-full failed"
count=0
while IFS= read -r applet; do
  [ -n "$applet" ] || continue
  [ "$applet" = bin/busybox ] && continue
  mkdir -p "$BB/$(dirname "$applet")"
  ln -sfn /bin/busybox "$BB/$applet"
  count=$((count + 1))
done <<< "$applets"
for a in sh echo sleep cat nc ls true false; do
  [ -L "$BB/bin/$a" ] || [ -L "$BB/usr/bin/$a" ] || die "busybox lacks the '$a' applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$BB/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$BB/etc/group"
chmod 0700 "$BB/root"
chmod 1777 "$BB/tmp"
build_image "$BUSYBOX_IMAGE" "$BB" \
  "{\"Env\":[\"$ENV_PATH\"],\"Cmd\":[\"sh\"],\"WorkingDir\":\"/\"}" "$OUT_DIR/busybox.tar"
log "busybox image has $count applet links"

# ---- pause --------------------------------------------------------------------------------
PR="$WORK/pause-rootfs"
mkdir -p "$PR"
# -ffile-prefix-map keeps the build directory out of the binary (reproducibility)
gcc -Os -static -s -ffile-prefix-map="$SCRIPT_DIR"=. -o "$PR/pause" "$PAUSE_SRC" \
  || die "gcc -static failed (Debian: apt-get install gcc libc6-dev)"
chmod 0755 "$PR/pause"
"$PR/pause" -v >/dev/null || die "the built pause binary does not run"
build_image "$PAUSE_IMAGE" "$PR" \
  "{\"Env\":[\"$ENV_PATH\"],\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"}" "$OUT_DIR/pause.tar"
