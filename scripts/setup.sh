#!/usr/bin/env bash
# Installs what lockcheck needs on a fresh Debian machine. Owned by the
# foundation issue; see README "Set-up".
set -euo pipefail
echo "setup: not built yet" >&2
