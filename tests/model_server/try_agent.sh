#!/usr/bin/env bash
# try_agent.sh — start one real agent TUI (Claude Code or Codex CLI) offline
# against the loopback model server, in a private tmux server, and leave it
# there for inspection.
#
#   tests/model_server/try_agent.sh claude|codex [options] [-- extra agent args]
#     --root DIR        throwaway root (default: mktemp -d /tmp/fm-try-<harness>-XXXXXX);
#                       holds home/, repo/ (unless --dir), server.log, hooks.jsonl
#     --dir DIR         worktree to run in (default: a fresh git repo ROOT/repo)
#     --script FILE     model-server rule file (default: rules.example.json here)
#     --port N          use an already running model server on this port
#     --size WxH        pane size (default 120x40)
#     --untrusted       do not pre-accept the folder-trust dialog
#     --ask             ask before running tools (Claude: --permission-mode manual;
#                       Codex: approval_policy = "on-request")
#     --hooks           install hooks that append to ROOT/hooks.jsonl
#     --max-secs S      model server lifetime (default 1800)
#     --bin PATH        agent executable (default: from scripts/agents.sh)
#   try_agent.sh --stop ROOT   kill that root's tmux server and model server
#
# Prints key=value lines: root, tmux (the -L socket name), target, port,
# server_log, home, dir, bin. Inspect with
#   tmux -L <tmux> capture-pane -p -J -t <target>
# The per-harness parts are the functions <harness>_files, <harness>_env and
# <harness>_argv below: what is written into the throwaway home, which
# environment variables are set, and the argv. docs/harnesses.md explains them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
die() { echo "try_agent.sh: $*" >&2; exit 1; }

# Fixed fake key: the server accepts anything; Claude remembers approval of
# the key by its last 20 characters (customApiKeyResponses).
API_KEY="sk-ant-fm-loopback-test-key-000000000000"

# ---------------------------------------------------------------- Claude Code
claude_files() { # home dir trusted ask hooks root
  local home="$1" dir="$2" trusted="$3" ask="$4" hooks="$5" root="$6"
  mkdir -p "$home/.claude"
  FM_HOME="$home" FM_DIR="$dir" FM_TRUSTED="$trusted" FM_ASK="$ask" FM_HOOKS="$hooks" \
  FM_ROOT="$root" FM_KEY="$API_KEY" FM_VERSION="$(claude_version)" python3 - <<'PY'
import json, os
home, d, root = os.environ["FM_HOME"], os.environ["FM_DIR"], os.environ["FM_ROOT"]
key = os.environ["FM_KEY"]
# ~/.claude.json: onboarding done, the API key approved, the worktree trusted.
state = {
    "hasCompletedOnboarding": True,
    "lastOnboardingVersion": os.environ["FM_VERSION"],
    "lastReleaseNotesSeen": os.environ["FM_VERSION"],
    "numStartups": 1,
    "theme": "dark",
    "autoUpdates": False,
    "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
    "bypassPermissionsModeAccepted": True,
    "projects": {},
}
if os.environ["FM_TRUSTED"] == "1":
    state["projects"][d] = {"hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                            "allowedTools": []}
json.dump(state, open(os.path.join(home, ".claude.json"), "w"), indent=2)
# ~/.claude/settings.json: no bypass-mode warning, no auto-updates, hooks.
settings = {"skipDangerousModePermissionPrompt": True, "autoUpdates": False,
            "includeCoAuthoredBy": False}
if os.environ["FM_HOOKS"] == "1":
    hook = os.path.join(root, "hook.sh")
    settings["hooks"] = {
        ev: [{"hooks": [{"type": "command", "command": "%s claude %s" % (hook, ev)}]}]
        for ev in ("SessionStart", "UserPromptSubmit", "Stop", "Notification",
                   "PreToolUse", "PostToolUse", "SessionEnd", "SubagentStop")}
json.dump(settings, open(os.path.join(home, ".claude", "settings.json"), "w"), indent=2)
PY
}

claude_env() { # home port
  cat <<EOF
HOME=$1
ANTHROPIC_BASE_URL=http://127.0.0.1:$2
ANTHROPIC_API_KEY=$API_KEY
IS_SANDBOX=1
DISABLE_AUTOUPDATER=1
DISABLE_TELEMETRY=1
DISABLE_ERROR_REPORTING=1
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1
CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1
EOF
}

claude_argv() { # bin ask hooks
  printf '%s\n' "$1"
  # Without either flag 2.1.332 starts in "auto mode" (a classifier decides).
  if [ "$2" = 1 ]; then
    printf '%s\n' --permission-mode manual
  else
    printf '%s\n' --dangerously-skip-permissions
  fi
}

claude_version() { sed -n 's/^claude=//p' "$repo_root/scripts/agents.versions"; }

# ------------------------------------------------------------------ Codex CLI
codex_files() { # home dir trusted ask hooks root port
  local home="$1" dir="$2" trusted="$3" ask="$4" hooks="$5" root="$6" port="$7"
  local ch="$home/.codex"
  mkdir -p "$ch"
  {
    # A model from Codex's built-in catalog: another name works but shows a
    # "Model metadata ... not found" warning in the footer.
    echo 'model = "gpt-5.5"'
    echo 'model_provider = "fmloop"'
    if [ "$ask" = 1 ]; then
      echo 'approval_policy = "on-request"'
    else
      echo 'approval_policy = "never"'
    fi
    echo 'sandbox_mode = "danger-full-access"'
    echo 'check_for_update_on_startup = false'
    echo 'model_reasoning_effort = "low"'
    if [ "$hooks" = 1 ]; then
      # notify: argv + one JSON argument, after each finished turn.
      printf 'notify = ["%s", "codex", "notify"]\n' "$root/hook.sh"
    fi
    echo
    echo '[model_providers.fmloop]'
    echo 'name = "fm loopback"'
    echo "base_url = \"http://127.0.0.1:$port/v1\""
    echo 'env_key = "FM_LOOPBACK_API_KEY"'
    echo 'wire_api = "responses"'
    echo 'request_max_retries = 0'
    echo 'stream_max_retries = 0'
    echo 'supports_websockets = false'
    echo
    echo '[analytics]'
    echo 'enabled = false'
    echo
    echo '[feedback]'
    echo 'enabled = false'
    echo
    echo '[notice]'
    echo 'hide_full_access_warning = true'
    echo 'hide_rate_limit_model_nudge = true'
    echo
    echo '# gpt-5.5 offers an upgrade to gpt-6-sol (a code-mode-only model); this'
    echo '# marks that "Try new model" prompt as already answered.'
    echo '[notice.model_migrations]'
    echo '"gpt-5.5" = "gpt-6-sol"'
    if [ "$trusted" = 1 ]; then
      echo
      echo "[projects.\"$dir\"]"
      echo 'trust_level = "trusted"'
    fi
  } > "$ch/config.toml"
  if [ "$hooks" = 1 ]; then
    # Claude-style lifecycle hooks (payload on stdin). Codex runs a hook only
    # once its hash is trusted (or with --dangerously-bypass-hook-trust).
    FM_CH="$ch" FM_HOOK="$root/hook.sh" python3 - <<'PY'
import json, os
events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
          "PostToolUse", "Stop", "Interrupt", "SessionEnd"]
hooks = {ev: [{"hooks": [{"type": "command", "command": "%s codex %s" % (os.environ["FM_HOOK"], ev)}]}]
         for ev in events}
json.dump({"hooks": hooks}, open(os.path.join(os.environ["FM_CH"], "hooks.json"), "w"), indent=2)
PY
  fi
}

codex_env() { # home port
  cat <<EOF
HOME=$1
CODEX_HOME=$1/.codex
FM_LOOPBACK_API_KEY=$API_KEY
EOF
}

codex_argv() { # bin ask hooks
  # --no-daemon: keep the agent inside the pane. Without it the TUI starts a
  # detached app-server daemon that outlives it (and its turns with it).
  printf '%s\n' "$1" --no-daemon
  # Hooks in a fresh CODEX_HOME are untrusted: a review dialog at start.
  if [ "$3" = 1 ]; then printf '%s\n' --dangerously-bypass-hook-trust; fi
}

# ---------------------------------------------------------------------- main
if [ "${1:-}" = "--stop" ]; then
  root="${2:?--stop ROOT}"
  [ -r "$root/tmux.name" ] && tmux -L "$(cat "$root/tmux.name")" kill-server 2>/dev/null || true
  [ -r "$root/server.pid" ] && kill "$(cat "$root/server.pid")" 2>/dev/null || true
  echo "stopped $root"
  exit 0
fi

harness="${1:-}"; shift || true
case "$harness" in claude|codex) ;; *) die "usage: try_agent.sh claude|codex [options] (see the header)" ;; esac
root="" dir="" script="$here/rules.example.json" port="" size="120x40" trusted=1 ask=0 hooks=0
max_secs=1800 bin=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --script) script="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --untrusted) trusted=0; shift ;;
    --ask) ask=1; shift ;;
    --hooks) hooks=1; shift ;;
    --max-secs) max_secs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown option $1" ;;
  esac
done
command -v tmux >/dev/null || die "tmux not found"
command -v python3 >/dev/null || die "python3 not found"

if [ -z "$root" ]; then root="$(mktemp -d "/tmp/fm-try-$harness-XXXXXX")"; fi
mkdir -p "$root"; root="$(cd "$root" && pwd)"
home="$root/home"; mkdir -p "$home"
if [ -z "$dir" ]; then
  dir="$root/repo"
  if [ ! -d "$dir/.git" ]; then
    mkdir -p "$dir"
    git -C "$dir" init -q
    git -C "$dir" -c user.name=fm -c user.email=fm@localhost.invalid commit -q --allow-empty -m init
  fi
fi
dir="$(cd "$dir" && pwd)"

if [ -z "$bin" ]; then
  bin="$(FM_AGENTS_DIR="${FM_AGENTS_DIR:-}" "$repo_root/scripts/agents.sh" "$harness" | sed -n "s/^$harness=//p")"
fi
[ -x "$bin" ] || die "no executable for $harness ($bin)"

# The hook script appends one line per call: time, harness, event, payload.
cat > "$root/hook.sh" <<EOF
#!/bin/sh
# \$1 harness, \$2 event; the payload arrives on stdin (Claude) or as \$3 (Codex notify).
{
  printf '{"t":%s,"harness":"%s","event":"%s","payload":' "\$(date +%s.%N)" "\$1" "\$2"
  if [ \$# -ge 3 ]; then printf '%s' "\$3"; else tr -d '\n'; fi
  printf '}\n'
} >> "$root/hooks.jsonl"
EOF
chmod +x "$root/hook.sh"

if [ -z "$port" ]; then
  : > "$root/server.out"
  python3 "$here/fm_model_server.py" --max-secs "$max_secs" --log "$root/server.log" \
    --script "$script" > "$root/server.out" 2> "$root/server.err" &
  echo $! > "$root/server.pid"
  for _ in $(seq 50); do grep -q '^port=' "$root/server.out" && break; sleep 0.1; done
  port="$(sed -n 's/^port=//p' "$root/server.out")"
  [ -n "$port" ] || die "model server did not start (see $root/server.err)"
fi

"${harness}_files" "$home" "$dir" "$trusted" "$ask" "$hooks" "$root" "$port"
mapfile -t envs < <("${harness}_env" "$home" "$port")
mapfile -t argv < <("${harness}_argv" "$bin" "$ask" "$hooks")
argv+=("${extra[@]}")
printf '%s\n' "${envs[@]}" > "$root/agent.env"
printf '%s\n' "${argv[@]}" > "$root/agent.argv"

name="fmr-$harness-$$"
echo "$name" > "$root/tmux.name"
w="${size%x*}"; h="${size#*x}"
# A clean environment: only what the harness needs, plus PATH, TERM and locale.
printf 'set -g remain-on-exit on\nset -g history-limit 5000\n' > "$root/tmux.conf"
tmux -L "$name" -f "$root/tmux.conf" new-session -d -s main -x "$w" -y "$h" -c "$dir" \
  env -i PATH="/usr/local/bin:/usr/bin:/bin" TERM=xterm-256color LANG=C.UTF-8 \
  "${envs[@]}" "${argv[@]}"

printf 'root=%s\ntmux=%s\ntarget=main\nport=%s\nserver_log=%s\nhome=%s\ndir=%s\nbin=%s\n' \
  "$root" "$name" "$port" "$root/server.log" "$home" "$dir" "$bin"
