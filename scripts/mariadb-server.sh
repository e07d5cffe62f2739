#!/usr/bin/env bash
# Install MariaDB's server binaries from Debian's packages if mariadbd is missing,
# without starting the system service (bufsim starts its own private server on a
# unix socket in a temporary directory; see bufsim.live.MariaDBServer).
# Needs root (or sudo) and apt-get. Used by .ci/run, `make mariadb` and
# `make reproduce` (through bufsim.notebooks.live_server_status).
#
#   scripts/mariadb-server.sh              install, asking sudo for a password if need be
#   scripts/mariadb-server.sh --if-root    install only as root or with password-less sudo;
#                                          otherwise print why on stderr and exit 3
set -euo pipefail
if_root=0
if [ "${1:-}" = "--if-root" ]; then if_root=1; fi
if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then
    echo "mariadbd is installed: $( (command -v mariadbd || echo /usr/sbin/mariadbd) )"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if [ "$if_root" = 1 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
            echo "mariadbd is missing and installing it needs root: run \`sudo make mariadb\`" >&2
            exit 3
        fi
    elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "installing mariadb-server needs root (or sudo)" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "no apt-get here: install mariadb-server (mariadbd, mariadb-install-db) with your package manager" >&2
    exit 1
fi
# policy-rc.d exiting 101 tells invoke-rc.d not to start services during the install
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mariadb-server
test -x /usr/sbin/mariadbd
echo "installed: $(/usr/sbin/mariadbd --version)"
