#!/usr/bin/env bash
# Installs the pinned real agent programs (Claude Code, Codex CLI) from the
# npm registry into a cache directory and prints where their executables are.
#
#   scripts/agents.sh [--env FILE] [claude|codex|opencode ...]   (default: claude codex)
#
# Cache: ${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}/<name>-<version>/
# Versions: scripts/agents.versions (one place; `name=version` lines).
# Idempotent: a directory already holding the pinned version is reused.
# Output (stdout): `claude=<path>`, `codex=<path>` (npm launcher) and
# `codex_native=<path>` (the binary the launcher runs) lines; with --env FILE
# also a sourceable file of FM_CLAUDE_BIN=, FM_CODEX_BIN=, FM_CODEX_NATIVE_BIN=.
# Needs only node and npm on PATH (works under `env -i PATH=/usr/bin:/bin`).
# Neither install downloads anything but npm packages: Claude Code's native
# binary comes in its platform optionalDependency, Codex's likewise.
set -euo pipefail

die() { echo "agents.sh: $*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
versions_file="$here/agents.versions"
env_file=""
want=()
while [ $# -gt 0 ]; do
  case "$1" in
    --env) [ $# -ge 2 ] || die "--env needs a file"; env_file="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    claude|codex|opencode) want+=("$1"); shift ;;
    *) die "unknown argument: $1 (want claude, codex, opencode, --env FILE)" ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=(claude codex)

[ -r "$versions_file" ] || die "missing $versions_file"
version_of() {
  local v
  v="$(sed -n "s/^$1=\([^[:space:]]*\).*/\1/p" "$versions_file" | head -n1)"
  [ -n "$v" ] || die "no version for $1 in $versions_file"
  printf '%s\n' "$v"
}

command -v node >/dev/null 2>&1 || die "node not found on PATH ($PATH)"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH ($PATH)"
[ -n "${HOME:-}" ] || die "HOME is not set"

root="${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}"
mkdir -p "$root" || die "cannot create $root"
root="$(cd "$root" && pwd)"

# npm package, executable inside the install dir, per program.
pkg_of() {
  case "$1" in
    claude) echo "@anthropic-ai/claude-code" ;;
    codex) echo "@openai/codex" ;;
    opencode) echo "opencode-ai" ;;
  esac
}
bin_of() { echo "node_modules/.bin/$1"; }

installed_version() { # dir pkg -> version or empty
  local pj="$1/node_modules/$2/package.json"
  [ -r "$pj" ] || return 0
  node -e 'try{process.stdout.write(require(process.argv[1]).version||"")}catch(e){}' "$pj"
}

check_runs() { # name exe -> prints the version it reports, or fails
  # Run in a throwaway home: `codex --version` otherwise touches ~/.codex.
  local out h rc=0
  h="$(mktemp -d)"
  out="$(HOME="$h" CODEX_HOME="$h/.codex" CLAUDE_CONFIG_DIR="$h/.claude" \
         DISABLE_AUTOUPDATER=1 "$2" --version 2>&1 </dev/null)" || rc=$?
  rm -rf "$h"
  [ "$rc" -eq 0 ] || { printf '%s\n' "$out" >&2; return 1; }
  printf '%s\n' "$out" | grep -v '^WARNING' | head -n1
}

install_one() { # name -> prints the executable path
  local name="$1" pkg ver dir exe tmp got
  pkg="$(pkg_of "$name")"; ver="$(version_of "$name")"
  dir="$root/$name-$ver"; exe="$dir/$(bin_of "$name")"
  got="$(installed_version "$dir" "$pkg")"
  if [ "$got" = "$ver" ] && [ -x "$exe" ] && check_runs "$name" "$exe" >/dev/null 2>&1; then
    printf '%s\n' "$exe"; return 0
  fi
  echo "agents.sh: installing $pkg@$ver into $dir" >&2
  tmp="$(mktemp -d "$root/.$name-$ver.XXXXXX")"
  trap 'rm -rf "$tmp" "$tmp.cache"' EXIT
  # A private npm cache (removed afterwards) keeps a bare HOME clean. No
  # --prefix: npm derives its global config (where a CA file may be set) from
  # the prefix, so a local install from inside the directory is used instead.
  if ! (cd "$tmp" && printf '{"name":"fm-agent-%s","private":true}\n' "$name" > package.json \
        && npm install --no-audit --no-fund --no-save --loglevel=error \
             --cache "$tmp.cache" "$pkg@$ver" >&2); then
    rm -rf "$tmp"; die "npm install $pkg@$ver failed (is the npm registry reachable?)"
  fi
  got="$(installed_version "$tmp" "$pkg")"
  [ "$got" = "$ver" ] || { rm -rf "$tmp"; die "$pkg installed as '$got', wanted $ver"; }
  if ! check_runs "$name" "$tmp/$(bin_of "$name")" >&2; then
    rm -rf "$tmp"; die "$pkg@$ver installed but '$name --version' fails (missing native binary?)"
  fi
  chmod 755 "$tmp"
  rm -rf "$dir" "$tmp.cache"; mv "$tmp" "$dir"; trap - EXIT
  # npm writes absolute paths nowhere that matters; .bin links are relative.
  printf '%s\n' "$exe"
}

# Codex's npm launcher (bin/codex.js) is a node script that execs the native
# binary (node >= 22.15) or, on older node, keeps running as its parent; the
# native path is printed too so a caller can launch it directly.
codex_native() { # install dir -> native codex binary or nothing
  local f
  for f in "$1"/node_modules/@openai/codex-*/vendor/*/bin/codex; do
    [ -x "$f" ] && { printf '%s\n' "$f"; return 0; }
  done
  return 0
}

lines=()
for name in "${want[@]}"; do
  exe="$(install_one "$name")"
  lines+=("$name=$exe")
  if [ "$name" = codex ]; then
    nat="$(codex_native "$root/codex-$(version_of codex)")"
    [ -n "$nat" ] && lines+=("codex_native=$nat")
  fi
done
printf '%s\n' "${lines[@]}"

if [ -n "$env_file" ]; then
  {
    echo "# written by scripts/agents.sh"
    for l in "${lines[@]}"; do
      n="${l%%=*}"; p="${l#*=}"
      printf 'FM_%s_BIN=%q\n' "$(echo "$n" | tr '[:lower:]' '[:upper:]')" "$p"
    done
  } > "$env_file"
fi
