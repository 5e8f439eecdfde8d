#!/usr/bin/env bash
# The headless browser the web console's test drives: Chromium and its WebDriver server,
# chromedriver (Debian packages chromium and chromium-driver; ca-certificates too, which the
# WebDriver client loads even to talk plain HTTP to chromedriver).
#
#   ./infra/browser.sh        install them when missing, then print both paths
#
# Idempotent: when both are on PATH it changes nothing. Installing needs apt-get and root
# (CI machines); anywhere else it says what to install. The console test runs this script
# itself when chromedriver is missing, so calling it first only saves that test the wait.
set -euo pipefail

fail() {
  echo "error: $*" >&2
  exit 1
}

# Debian names the browser `chromium`; other distributions `chromium-browser`.
browser() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

driver() {
  command -v chromedriver 2>/dev/null || true
}

if [ -z "$(browser)" ] || [ -z "$(driver)" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing chromium and chromium-driver (once; about a minute) ..." >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      chromium chromium-driver ca-certificates >&2
  else
    fail "chromium and chromedriver are needed for the web console test; install them \
(Debian/Ubuntu: apt-get install chromium chromium-driver) or run this script as root"
  fi
fi

[ -n "$(browser)" ] || fail "chromium is still not on PATH after installing it"
[ -n "$(driver)" ] || fail "chromedriver is still not on PATH after installing chromium-driver"
echo "chromium: $(browser)"
echo "chromedriver: $(driver)"
