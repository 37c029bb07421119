#!/usr/bin/env bash
# Installs the pinned real agent programs (Claude Code, Codex CLI) from the
# npm registry into a cache directory and prints where their executables are.
#
#   scripts/agents.sh [--newest] [--env FILE] [claude|codex|opencode ...]   (default: claude codex)
#
# Cache: ${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}/<name>-<version>/
# Versions: scripts/agents.versions (one place; `name=version` lines).
# --newest: the newest version the registry publishes (`npm view <pkg>
# version`) instead, in a separate prefix <cache>/newest/<name>-<version>/,
# so the pinned installs stay as they are.
# Idempotent: a directory already holding the wanted version is reused.
# Output (stdout): `claude=<path>`, `codex=<path>` (npm launcher) and
# `codex_native=<path>` (the binary the launcher runs) lines; stderr names
# each version (`agents.sh: codex 0.171.0 (newest) at …`). With --env FILE
# also a sourceable file for the conformance suite: FM_CLAUDE_BIN=,
# FM_CODEX_BIN= (the native binary, as the suite launches it) and
# FM_CODEX_LAUNCHER_BIN= (the npm launcher).
# Needs only node and npm on PATH (works under `env -i PATH=/usr/bin:/bin`).
# Neither install downloads anything but npm packages: Claude Code's native
# binary comes in its platform optionalDependency, Codex's likewise.
set -euo pipefail

die() { echo "agents.sh: $*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
versions_file="$here/agents.versions"
env_file=""
newest=0
want=()
while [ $# -gt 0 ]; do
  case "$1" in
    --env) [ $# -ge 2 ] || die "--env needs a file"; env_file="$2"; shift 2 ;;
    --newest) newest=1; shift ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    claude|codex|opencode) want+=("$1"); shift ;;
    *) die "unknown argument: $1 (want claude, codex, opencode, --newest, --env FILE)" ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=(claude codex)

[ -r "$versions_file" ] || die "missing $versions_file"
pinned_of() {
  local v
  v="$(sed -n "s/^$1=\([^[:space:]]*\).*/\1/p" "$versions_file" | head -n1)"
  [ -n "$v" ] || die "no version for $1 in $versions_file"
  printf '%s\n' "$v"
}
declare -A newest_seen=()
newest_of() { # name -> the registry's newest version (asked once)
  local v
  if [ -z "${newest_seen[$1]:-}" ]; then
    v="$(cd "${TMPDIR:-/tmp}" && npm view --loglevel=error "$(pkg_of "$1")" version 2>/dev/null | tail -n1)" \
      || die "npm view $(pkg_of "$1") version failed (is the npm registry reachable?)"
    case "$v" in
      [0-9]*.[0-9]*.[0-9]*) ;;
      *) die "npm view $(pkg_of "$1") version gave '$v', not a version" ;;
    esac
    newest_seen[$1]="$v"
  fi
  printf '%s\n' "${newest_seen[$1]}"
}
version_of() {
  if [ "$newest" = 1 ]; then newest_of "$1"; else pinned_of "$1"; fi
}

command -v node >/dev/null 2>&1 || die "node not found on PATH ($PATH)"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH ($PATH)"
[ -n "${HOME:-}" ] || die "HOME is not set"

root="${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}"
mkdir -p "$root" || die "cannot create $root"
root="$(cd "$root" && pwd)"
# The newest releases live apart: the pinned installs are never replaced.
if [ "$newest" = 1 ]; then root="$root/newest"; mkdir -p "$root" || die "cannot create $root"; fi

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

# Asked before any install: `npm view` must not run inside a subshell
# whose answer is thrown away.
for name in "${want[@]}"; do version_of "$name" >/dev/null; done

lines=()
env_lines=()
for name in "${want[@]}"; do
  ver="$(version_of "$name")"
  exe="$(install_one "$name")"
  lines+=("$name=$exe")
  kind=pinned; [ "$newest" = 1 ] && kind=newest
  echo "agents.sh: $name $ver ($kind) at $exe" >&2
  case "$name" in
    codex)
      nat="$(codex_native "$root/codex-$ver")"
      [ -n "$nat" ] && lines+=("codex_native=$nat")
      env_lines+=("FM_CODEX_BIN=$(printf '%q' "${nat:-$exe}")")
      env_lines+=("FM_CODEX_LAUNCHER_BIN=$(printf '%q' "$exe")") ;;
    *) env_lines+=("FM_$(echo "$name" | tr '[:lower:]' '[:upper:]')_BIN=$(printf '%q' "$exe")") ;;
  esac
done
printf '%s\n' "${lines[@]}"

if [ -n "$env_file" ]; then
  {
    echo "# written by scripts/agents.sh$([ "$newest" = 1 ] && echo ' --newest')"
    printf 'export %s\n' "${env_lines[@]}"
  } > "$env_file"
fi
