#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine with Node 20+, as root:
# the npm workspace (from package-lock.json) and, with --containerd, the Debian packages the
# containerd integration tests need (tools/containerd/start.sh installs them on demand too).
set -euo pipefail
cd "$(dirname "$0")/.."

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "install: Node.js 20 or newer is required (found $(node --version))" >&2
  exit 1
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "install: npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi
