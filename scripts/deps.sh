#!/usr/bin/env bash
# Installs what firstmate's demo and tests need (tmux and git; python3 for
# the tests' stand-in pane programs; OpenSSH's client and server for the
# remote-host tests, which start their own sshd; Debian's Chromium for the
# web cockpit's browser tests, which drive it headless) when missing,
# and gives git an identity if it has none (the demo and tests commit).
set -euo pipefail
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v git >/dev/null 2>&1 || need+=(git)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: please install: ${need[*]}" >&2
    exit 3
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
git config --global user.name >/dev/null 2>&1 || git config --global user.name "firstmate"
git config --global user.email >/dev/null 2>&1 || git config --global user.email "firstmate@localhost.invalid"
