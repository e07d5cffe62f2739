#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver if /usr/bin/chromium or
# /usr/bin/chromedriver is missing (tests/test_browser.py drives them; it never
# downloads a driver). Needs root (or sudo) and apt-get. Used by .ci/run,
# `make chromium` and `make test`.
#
#   scripts/chromium.sh              install, asking sudo for a password if need be
#   scripts/chromium.sh --if-root    install only as root or with password-less sudo;
#                                    otherwise print why on stderr and exit 3
set -euo pipefail
if_root=0
if [ "${1:-}" = "--if-root" ]; then if_root=1; fi
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if [ "$if_root" = 1 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
            echo "chromium or chromedriver missing and installing them needs root: the browser" \
                 "test will be skipped (\`sudo make chromium\` installs them)" >&2
            exit 3
        fi
    elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "installing chromium needs root (or sudo)" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "no apt-get here: install chromium and its chromedriver with your package manager" >&2
    exit 1
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    chromium chromium-driver
test -x /usr/bin/chromium && test -x /usr/bin/chromedriver
echo "installed: $(/usr/bin/chromium --version)"
