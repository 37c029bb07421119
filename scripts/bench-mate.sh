#!/usr/bin/env bash
# The first mate's cost per wake (docs/mate.md, "Cost per wake"): what an AI
# lead receives, in bytes and tool calls, to act on one fixed scenario, here
# and in the bash original (the public EvanAgee/firstmate repository, run as
# it is), side by side.
#
# The scenario, built twice in throwaway directories with private tmux
# servers: 20 workers, then within one minute two keyed decisions, one
# blocker, one finished ship and one steering message that is never
# acknowledged and escalates. The lead is then woken and acts on all five.
#
#   ours:  the Stop hook hands the lead the packet of `fm wake` (no call);
#          the lead runs the commands the packet names, the ack chained
#          into the last one.
#   orig:  the Stop hook hands the lead its watcher's wake banner (no call);
#          the lead runs `fm-wake-drain.sh` and the follow-up calls the
#          original's AGENTS.md and the skills it loads prescribe for each
#          event, then the acknowledgement the drain prints.
#
# Counted: bytes of everything the model receives (hook text and the output
# of each call, stdout and stderr), tokens estimated as bytes / 4, and calls.
# What the model gets once per session is counted apart: the manual
# (AGENTS.md, CLAUDE.md, the skills' descriptions) and the session-start
# digest; and the manual re-read by each model request of the wake.
#
#   scripts/bench-mate.sh [--orig GIT-URL-OR-DIR] [--side both|ours|orig] [--keep]
#
# Needs tmux, git, python3 and the debug build of this repository's tools
# (cargo build; FM_BIN names another directory). The original's side needs
# only bash and the usual tools; its `treehouse get` (a release binary, not a
# packaged tool) is replaced by a three-line shim doing what it does here: a
# subshell in a fresh worktree of the project.
# Raw outputs are kept in target/bench-mate/<side>/. Exit 0 when both sides
# ran; 2 when ours cannot (`fm wake` missing, or `fm mate init` writing no
# manual), after what could run is printed; 1 when a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

orig_src=https://github.com/EvanAgee/firstmate.git
side=both
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --orig) orig_src=$2; shift 2 ;;
        --side) side=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-mate: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$side" in both|ours|orig) ;; *) echo "bench-mate: --side both|ours|orig" >&2; exit 2 ;; esac

fm_bin=${FM_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug}
out=${CARGO_TARGET_DIR:-$repo/target}/bench-mate
rm -rf "$out"
mkdir -p "$out"
rows="$out/rows.tsv" # side, event, what, bytes, calls, exit
: > "$rows"

# Short: the original prints status file paths in full, and a home's usual
# path (~/firstmate) is about as long as this one's.
work=$(mktemp -d /tmp/fmm-XXXXXX)
pgids=()
cleanup() {
    for g in "${pgids[@]}"; do kill -- "-$g" 2>/dev/null || true; done
    [ -d "$work/orig-tmux" ] && TMUX_TMPDIR="$work/orig-tmux" tmux kill-server 2>/dev/null || true
    if [ -n "${ours_socket:-}" ]; then
        tmux -L "$ours_socket" kill-server 2>/dev/null || true
        rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$ours_socket"
    fi
    if [ "$keep" = 1 ]; then
        echo "bench-mate: kept $work" >&2
    else
        rm -rf "$work"
        for i in $(seq -w 1 20); do rm -rf "/tmp/fm-mb$i"; done # the original's per-task temp
    fi
}
trap cleanup EXIT

# The fixed scenario, the same words on both sides.
n_workers=20
q_cache="Postgres or SQLite for the session cache? A) Postgres, shared, needs a server B) SQLite, a local file"
q_api="Keep the /v1 routes after adding /v2? A) keep both for one release B) drop /v1 now"
a_cache="B: SQLite; the cache stays local to one process."
a_api="A: keep /v1 for one release and mark it deprecated."
blocker="the integration tests need a database URL and none is set in the worktree"
a_blocker="Use DATABASE_URL=sqlite:///tmp/it.db for the integration tests."
steer="Rebase on main before you continue: the login module moved."

# row SIDE EVENT WHAT BYTES CALLS EXIT
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$rows"; }

# call SIDE EVENT WHAT CMD…: runs one tool call as the lead would, records the
# bytes it printed (stdout and stderr, as a harness shows both).
call_n=0
call() {
    local s=$1 ev=$2 what=$3 f rc=0
    shift 3
    call_n=$((call_n + 1))
    f="$out/$s/$(printf '%02d' "$call_n")-$ev.txt"
    "$@" > "$f" 2>&1 < /dev/null || rc=$?
    row "$s" "$ev" "$what" "$(wc -c < "$f")" 1 "$rc"
}

# received SIDE EVENT WHAT FILE: text handed to the model without a call.
received() { row "$1" "$2" "$3" "$(wc -c < "$4")" 0 0; }

# wait_for SECS CMD…: polls until CMD succeeds.
wait_for() {
    local secs=$1 i
    shift
    for ((i = 0; i < secs * 10; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# The manual: counted once per session, not per wake.
manual_orig() {
    local src=$1 f
    f="$out/orig/manual.txt"
    cat "$src/AGENTS.md" "$src/CLAUDE.md" > "$f"
    row orig manual "AGENTS.md + CLAUDE.md" "$(wc -c < "$f")" 0 0
    # Claude Code lists every skill's name and description on every turn.
    for s in "$src"/.agents/skills/*/SKILL.md; do
        awk 'NR == 1 && /^---$/ { f = 1; next } f && /^---$/ { exit } f' "$s"
    done > "$out/orig/skill-descriptions.txt"
    row orig manual "skill descriptions" "$(wc -c < "$out/orig/skill-descriptions.txt")" 0 0
}

# ---------------------------------------------------------------------------
# The original's side.
# ---------------------------------------------------------------------------
run_orig() {
    local O="$work/orig" H bin="$work/orig-bin" i id sh_bash
    mkdir -p "$out/orig" "$bin" "$work/orig-tmux" "$work/orig-tmp"
    echo "== orig: clone $orig_src" >&2
    git clone -q "$orig_src" "$O"
    git -C "$O" rev-parse HEAD > "$out/orig/commit"
    H=$O # the checkout is the home: data/ state/ config/ projects/ are its own
    mkdir -p "$H"/{data,state,config,projects}
    manual_orig "$O"

    # The shims: `treehouse get` (a subshell in a fresh worktree), the agent in
    # each pane (a bare composer that reads and ignores what it is sent) and
    # the harness ancestor the Stop hook verifies (a bash named claude).
    cat > "$bin/treehouse" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = get ] || exit 0
wt=$(mktemp -d) && git worktree add -q --detach "$wt" HEAD && cd "$wt" && exec bash --noprofile --norc
EOF
    # The agent keeps its first screen line moving, as a working agent's pane
    # does: an idle-looking pane would be reported stale after two polls.
    cat > "$bin/agent" <<'EOF'
#!/usr/bin/env bash
( n=0; while sleep 1; do n=$((n + 1)); printf '\0337\033[1;1Hworking %s\033[K\0338' "$n"; done ) &
while IFS= read -r -p '› ' line; do printf 'read %d bytes\n' "${#line}"; done
EOF
    sh_bash=$(command -v bash)
    ln -s "$sh_bash" "$bin/claude"
    chmod +x "$bin/treehouse" "$bin/agent"

    export FM_HOME=$H PATH="$bin:$PATH" TMUX_TMPDIR="$work/orig-tmux" TMPDIR="$work/orig-tmp"
    export FM_GH_HEALTH_PROBE_CMD=true # no network here: GitHub reads as reachable
    export FM_SUPERVISION_MODEL=autoarm # a Claude lead: the Stop hook arms the watcher
    export FM_POLL=2                    # the watcher's poll (default 15 s): only latency
    unset TMUX
    tmux -f /dev/null new-session -d -s firstmate -x 200 -y 50
    tmux set -g default-command "bash --noprofile --norc"

    local remote="$work/orig-remote.git" proj="$H/projects/webapp"
    git init -q --bare -b main "$remote"
    git clone -q "$remote" "$proj" 2> /dev/null
    git -C "$proj" -c user.name=bench -c user.email=bench@invalid commit -q --allow-empty -m init
    git -C "$proj" push -q origin main

    echo "== orig: brief and spawn $n_workers workers" >&2
    local t0=$SECONDS
    for i in $(seq -w 1 "$n_workers"); do
        id="mb$i"
        (cd "$H" && bin/fm-brief.sh "$id" webapp --mode local-only > /dev/null)
        (cd "$H" && bin/fm-spawn.sh "$id" projects/webapp --mode local-only --yolo off \
            --harness "$bin/agent --bench" --backend tmux > "$out/orig/spawn-$id.txt" 2>&1) \
            || { cat "$out/orig/spawn-$id.txt" >&2; echo "bench-mate: orig spawn $id failed" >&2; return 1; }
    done
    echo "   spawned in $((SECONDS - t0)) s" >&2

    # The session opens: its SessionStart hook runs the digest, handed to the
    # model once per session.
    printf '{"session_id":"bench","source":"startup"}\n' > "$work/start-payload"
    (cd "$H" && timeout 300 claude -c '"$FM_HOME/bin/fm-sessionstart-run.sh"; exit $?' \
        < "$work/start-payload" > "$out/orig/session-start.txt" 2> /dev/null) || true
    row orig session "SessionStart hook: the digest" "$(wc -c < "$out/orig/session-start.txt")" 0 0

    echo "== orig: five events within a minute" >&2
    local st="$H/state"
    printf 'needs-decision [key=cache-store]: %s\n' "$q_cache" >> "$st/mb01.status"
    printf 'needs-decision [key=api-version]: %s\n' "$q_api" >> "$st/mb02.status"
    printf 'blocked: %s\n' "$blocker" >> "$st/mb03.status"
    local wt4
    wt4=$(sed -n 's/^worktree=//p' "$st/mb04.meta")
    git -C "$wt4" checkout -q -b fm/mb04
    echo "the small change" > "$wt4/feature.txt"
    git -C "$wt4" add feature.txt
    git -C "$wt4" -c user.name=bench -c user.email=bench@invalid commit -q -m "feature: the small change"
    printf 'done: ready in branch fm/mb04\n' >> "$st/mb04.status"
    # The steer, delivered; the agent never answers it. The original runs its
    # ladder (the request, one recovery request, then one escalation) only for
    # second mates; its last step, the escalation record, is written here by
    # its own library functions, as its watcher writes it.
    (cd "$H" && bin/fm-send.sh mb05 "$steer" > "$out/orig/steer.txt" 2>&1)
    (
        # shellcheck source=/dev/null
        . "$O/bin/fm-pending-reply-lib.sh"
        corr=$(fm_pending_reply_create "$H" "$st" mb05 "$steer")
        rec=$(fm_pending_reply_path "$st" "$corr")
        fm_pending_reply_mark_delivered "$st" "$corr"
        now=$(date +%s)
        fm_pending_reply_set "$rec" recovery_attempted_epoch "$now"
        fm_pending_reply_set "$rec" recovery_sent_epoch "$now"
        fm_pending_reply_set "$rec" recovery_delivery_outcome confirmed
        fm_pending_reply_set "$rec" recovery_turn_completed_epoch "$now"
        fm_pending_reply_set "$rec" phase recovery_sent
        fm_pending_reply_maybe_escalate "$st" "$corr"
    )
    grep -q 'pending-reply-missed' "$st/mb05.status" \
        || { echo "bench-mate: the original's escalation record was not written" >&2; return 1; }

    # Wakes: the Stop hook (run as its harness would, a child of the process
    # holding the session lock) arms the watcher and, on an actionable close,
    # hands the model its banner (exit 2). Each wake: drain, handle, ack.
    local wake=0 rc banner drain ack hook hook_wait=90 esc_key
    while :; do
        wake=$((wake + 1))
        banner="$out/orig/wake$wake-banner.txt"
        rc=0
        printf '{"session_id":"bench","stop_hook_active":false}\n' > "$work/stop-payload"
        (cd "$H" && exec setsid claude -c 'printf "%s\n" "$$" > "$FM_HOME/state/.lock"; "$FM_HOME/bin/fm-claude-stop-autoarm.sh"; exit $?' \
            < "$work/stop-payload" > /dev/null 2> "$banner") &
        hook=$!
        pgids+=("$hook")
        if wait_for "$hook_wait" eval '! kill -0 "$hook" 2> /dev/null'; then
            wait "$hook" || rc=$?
        else
            kill -- "-$hook" 2> /dev/null || true
            wait "$hook" 2> /dev/null || true
            rc=124
        fi
        if [ "$rc" != 2 ]; then
            [ "$wake" -gt 1 ] && { echo "   no further wake within $hook_wait s" >&2; break; }
            echo "bench-mate: the original's Stop hook did not wake (exit $rc)" >&2
            cat "$banner" >&2
            return 1
        fi
        received orig "wake$wake" "Stop hook banner" "$banner"
        cd "$H"
        call orig "wake$wake" "bin/fm-wake-drain.sh" bin/fm-wake-drain.sh
        drain=$(cat "$out/orig/$(printf '%02d' "$call_n")-wake$wake.txt")
        if [ "$wake" = 1 ]; then
            # Two decisions: the answer with --resolve-key (AGENTS.md §7).
            call orig decision "fm-send.sh --resolve-key (cache-store)" bin/fm-send.sh mb01 --resolve-key cache-store "$a_cache"
            call orig decision "fm-send.sh --resolve-key (api-version)" bin/fm-send.sh mb02 --resolve-key api-version "$a_api"
            # The blocker: current state first (§8), then the answer.
            call orig blocker "fm-crew-state.sh" bin/fm-crew-state.sh mb03
            # An unkeyed blocker is held under the key "default".
            call orig blocker "fm-send.sh --resolve-key" bin/fm-send.sh mb03 --resolve-key default "$a_blocker"
            # The finished ship: judged by its current state (§7), then reported.
            call orig done "fm-crew-state.sh" bin/fm-crew-state.sh mb04
            # The escalated message: an unresponsive worker (§8, §13) loads the
            # stuck-worker skill, which peeks the pane, then redirects in one line.
            call orig escalation "load stuck-crewmate-recovery" cat .agents/skills/stuck-crewmate-recovery/SKILL.md
            call orig escalation "fm-peek.sh" bin/fm-peek.sh mb05
            esc_key=$(printf '%s\n' "$drain" | sed -n 's/^mb05 \[key=\([^]]*\)\].*/\1/p' | head -1)
            call orig escalation "fm-send.sh --resolve-key" bin/fm-send.sh mb05 --resolve-key "$esc_key" "$steer"
        fi
        ack=$(printf '%s\n' "$drain" | sed -n 's/.*run \(bin\/fm-wake-drain\.sh --ack-through [^ ]* --recovery-generation [^ ]*\).*/\1/p' | head -1)
        [ -n "$ack" ] || { echo "bench-mate: no WAKE_ACK_REQUIRED in the drain" >&2; return 1; }
        # shellcheck disable=SC2086 # the printed command, split as the lead's shell would
        call orig "wake$wake" "ack" $ack
        cd "$repo"
        [ "$wake" -lt 4 ] || break
    done
    unset FM_HOME TMUX_TMPDIR TMPDIR FM_GH_HEALTH_PROBE_CMD FM_SUPERVISION_MODEL FM_POLL
    PATH=${PATH#"$bin:"}
}

# ---------------------------------------------------------------------------
# Our side.
# ---------------------------------------------------------------------------
run_ours() {
    local H="$work/ours" i id
    mkdir -p "$out/ours"
    for t in fm fm-brief fm-control fm-send fm-status fm-watch fm-crew-state fm-stand-in fm-ack fm-dod; do
        [ -x "$fm_bin/$t" ] || { echo "bench-mate: $fm_bin/$t missing (cargo build)" >&2; return 3; }
    done
    if ! "$fm_bin/fm" wake --help > /dev/null 2>&1; then
        echo "bench-mate: \`fm wake\` is missing from $fm_bin/fm: our side cannot run yet" >&2
        return 2
    fi
    export FM_HOME=$H PATH="$fm_bin:$PATH"
    ours_socket="fm-bench-mate-$$"
    export FM_TMUX_SOCKET=$ours_socket FM_TMUX_SESSION=fm-bench
    # The ladder, shortened: the first re-ring after 1 s, two re-rings, then
    # the one escalation (docs/spec/config.md, [watch]).
    export FM_WATCH_GRACE_SECS=1 FM_WATCH_MAX_RINGS=2 FM_SEND_SETTLE_MS=100 FM_SEND_ENTER_WAIT_MS=200
    fm init "$H" > /dev/null
    local remote="$work/ours-remote.git" proj="$work/ours-project"
    git init -q --bare -b main "$remote"
    git init -q -b main "$proj"
    git -C "$proj" -c user.name=bench -c user.email=bench@invalid commit -q --allow-empty -m init
    git -C "$proj" remote add origin "$remote"
    git -C "$proj" push -q origin main

    echo "== ours: brief and spawn $n_workers workers" >&2
    local t0=$SECONDS
    for i in $(seq -w 1 "$n_workers"); do
        id="w$i"
        fm-brief "$id" webapp --mode local-only --intent "Make the small change $i." --spec "One commit on your branch, then report done." > /dev/null
        fm-control "$id" spawn --project "$proj" --harness stand-in > "$out/ours/spawn-$id.txt" 2>&1 \
            || { cat "$out/ours/spawn-$id.txt" >&2; echo "bench-mate: ours spawn $id failed" >&2; return 1; }
    done
    for i in $(seq -w 1 "$n_workers"); do
        wait_for 20 sh -c "tmux -L $ours_socket capture-pane -p -t \"\$(sed -n 's/^pane=//p' '$H/state/w$i.meta')\" | grep -q 'stand-in>'" \
            || { echo "bench-mate: stand-in w$i never showed its composer" >&2; return 1; }
    done
    echo "   spawned in $((SECONDS - t0)) s" >&2
    setsid fm-watch > "$out/ours/watch.txt" 2>&1 < /dev/null &
    pgids+=("$!")
    # The lead's cursor starts here: the spawns are not part of the scenario.
    local p0
    p0=$(fm wake 2> /dev/null | sed -n 's/.*fm wake --ack \([^ ]*\).*/\1/p' | tail -1)
    [ -z "$p0" ] || fm wake --ack "$p0" > /dev/null

    # The session opens: its SessionStart hook prints the digest, handed to
    # the model once per session.
    fm mate hook session-start --harness claude < /dev/null > "$out/ours/session-start.txt" 2> /dev/null || true
    row ours session "SessionStart hook: the digest" "$(wc -c < "$out/ours/session-start.txt")" 0 0

    echo "== ours: five events within a minute" >&2
    # The workers' own doings, through their inboxes (the stand-in acts on
    # each line); not the lead's calls.
    fm-send w01 "status needs-decision --key cache-store $q_cache" > /dev/null
    fm-send w02 "status needs-decision --key api-version $q_api" > /dev/null
    fm-send w03 "status blocked $blocker" > /dev/null
    local wt4
    wt4=$(sed -n 's/^worktree=//p' "$H/state/w04.meta")
    git -C "$wt4" checkout -q -b fm/w04
    fm-send w04 "commit feature.txt the small change
status done ready in branch fm/w04" > /dev/null
    fm-send w05 "deaf
$steer" > /dev/null
    wait_for 60 grep -q "	w05	escalation	" "$H/state/wakes.log" \
        || { echo "bench-mate: no escalation wake for w05" >&2; return 1; }
    wait_for 30 sh -c "grep -q 'done' '$H/state/w04.status' && grep -q 'blocked' '$H/state/w03.status' && grep -q 'api-version' '$H/state/w02.status' && grep -q 'cache-store' '$H/state/w01.status'" \
        || { echo "bench-mate: the workers' status lines did not all land" >&2; return 1; }

    # Wakes: the Stop hook (`fm mate hook stop`, as `fm mate init` wires it)
    # hands the lead the packet, no call; the lead's commands carry the mark
    # its harness settings set. The lead runs the commands the packet names,
    # one call per event, the ack chained into the last one.
    export FM_MATE=1
    local wake=0 packet token rc
    while :; do
        wake=$((wake + 1))
        packet="$out/ours/wake$wake-packet.txt"
        rc=0
        fm mate hook stop --harness claude --timeout 60 < /dev/null > /dev/null 2> "$packet" || rc=$?
        if [ "$rc" != 2 ] || grep -q '^firstmate: no news' "$packet"; then
            [ "$wake" -gt 1 ] && { echo "   no further wake within 60 s" >&2; break; }
            echo "bench-mate: no wake packet" >&2
            return 1
        fi
        received ours "wake$wake" "Stop hook: the packet" "$packet"
        token=$(sed -n 's/.*fm wake --ack \([^ ]*\).*/\1/p' "$packet" | tail -1)
        [ -n "$token" ] || { echo "bench-mate: no ack line in the packet" >&2; cat "$packet" >&2; return 1; }
        if [ "$wake" = 1 ]; then
            for t in w01 w02 w03 w04 w05; do
                grep -q "$t" "$packet" || { echo "bench-mate: the packet does not name $t" >&2; cat "$packet" >&2; return 1; }
            done
            call ours decision "fm send --resolve-key (cache-store)" fm send w01 --resolve-key cache-store -- "$a_cache"
            call ours decision "fm send --resolve-key (api-version)" fm send w02 --resolve-key api-version -- "$a_api"
            call ours blocker "fm send --resolve-key (default)" fm send w03 --resolve-key default -- "$a_blocker"
            call ours done "fm dod --check" fm dod --check w04
            call ours escalation "fm peek && fm control interrupt && fm wake --ack" \
                sh -c 'fm peek w05 --lines 40 && fm control w05 interrupt && fm wake --ack "$1"' sh "$token"
        else
            call ours "wake$wake" "fm wake --ack" fm wake --ack "$token"
        fi
        [ "$wake" -lt 4 ] || break
    done
    unset FM_MATE FM_HOME FM_TMUX_SOCKET FM_TMUX_SESSION FM_WATCH_GRACE_SECS FM_WATCH_MAX_RINGS FM_SEND_SETTLE_MS FM_SEND_ENTER_WAIT_MS
    PATH=${PATH#"$fm_bin:"}
}

# The manual of ours: what `fm mate init` writes into a home, counted as the
# original's is (the manual, and the skills' descriptions listed every turn).
manual_ours() {
    local H="$work/ours-manual"
    mkdir -p "$out/ours"
    "$fm_bin/fm" init "$H" > /dev/null
    "$fm_bin/fm" mate init "$H" > /dev/null 2>&1 || true
    if [ ! -s "$H/AGENTS.md" ]; then
        echo "bench-mate: \`fm mate init\` wrote no AGENTS.md: our manual is not measured" >&2
        return 2
    fi
    cat "$H/AGENTS.md" "$H/CLAUDE.md" 2> /dev/null > "$out/ours/manual.txt"
    row ours manual "AGENTS.md + CLAUDE.md" "$(wc -c < "$out/ours/manual.txt")" 0 0
    for s in "$H"/.agents/skills/*/SKILL.md; do
        [ -f "$s" ] || continue
        awk 'NR == 1 && /^---$/ { f = 1; next } f && /^---$/ { exit } f' "$s"
    done > "$out/ours/skill-descriptions.txt"
    row ours manual "skill descriptions" "$(wc -c < "$out/ours/skill-descriptions.txt")" 0 0
}

rc=0
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$side" != ours ]; then run_orig || rc=$?; fi
if [ "$side" != orig ]; then
    run_ours || rc=$?
    mrc=0
    manual_ours || mrc=$?
    [ "$rc" != 0 ] || rc=$mrc
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
orig_commit=$(cat "$out/orig/commit" 2> /dev/null || echo "not run")
python3 - "$rows" "$started" "$load_start" "$load_end" "$orig_commit" <<'PY'
import math, sys
rows_path, started, load_start, load_end, orig_commit = sys.argv[1:6]
rows = [l.rstrip("\n").split("\t") for l in open(rows_path) if l.strip()]
tok = lambda b: math.ceil(b / 4)
def pick(side, pred):
    rs = [r for r in rows if r[0] == side and pred(r[1])]
    return sum(int(r[3]) for r in rs), sum(int(r[4]) for r in rs), bool(rs)
groups = [
    ("the wake: what arrives, the drain, the ack", lambda e: e == "wake1"),
    ("2 decisions", lambda e: e == "decision"),
    ("1 blocker", lambda e: e == "blocker"),
    ("1 finished ship", lambda e: e == "done"),
    ("1 escalated message", lambda e: e == "escalation"),
    ("later wakes the handling raised", lambda e: e.startswith("wake") and e != "wake1"),
]
def cell(b, c, ok):
    return f"{b:,} B · {tok(b):,} tok · {c} calls" if ok else "—"
print(f"Run {started}, load average {load_start} at start, {load_end} at end; original at {orig_commit[:12]}.")
print()
print("| | original | ours |")
print("|---|---|---|")
tot = {"orig": [0, 0, False], "ours": [0, 0, False]}
for name, pred in groups:
    cells = []
    for side in ("orig", "ours"):
        b, c, ok = pick(side, pred)
        t = tot[side]
        t[0] += b; t[1] += c; t[2] = t[2] or ok
        cells.append(cell(b, c, ok))
    print(f"| {name} | {cells[0]} | {cells[1]} |")
print(f"| **all five events** | **{cell(*tot['orig'])}** | **{cell(*tot['ours'])}** |")
if tot["orig"][2] and tot["ours"][2] and tot["orig"][0]:
    print(f"| ours / original | | {tot['ours'][0] / tot['orig'][0]:.2f} of the bytes, {tot['ours'][1]} calls against {tot['orig'][1]} |")
    skills = sum(int(r[3]) for r in rows if r[0] == "orig" and r[2].startswith("load ") and r[1] != "manual")
    if skills:
        print(f"| the same, the original's skill reads left out ({skills:,} B) | | {tot['ours'][0] / (tot['orig'][0] - skills):.2f} of the bytes |")
for side in ("orig", "ours"):
    b, c, ok = pick(side, lambda e: e in ("manual", "session"))
    if ok:
        parts = " + ".join(f"{r[2]} {int(r[3]):,} B" for r in rows if r[0] == side and r[1] in ("manual", "session"))
        print(f"| once per session ({side}) | {parts} = {b:,} B · {tok(b):,} tok | |")
man = {side: pick(side, lambda e: e == "manual") for side in ("orig", "ours")}
if man["orig"][2] and man["ours"][2] and tot["orig"][2] and tot["ours"][2]:
    re = {side: (tot[side][1] + 1) * tok(man[side][0]) for side in ("orig", "ours")}
    print(f"| manual re-read per wake: (calls + 1) model requests × the manual | {re['orig']:,} tok | {re['ours']:,} tok |")
print()
print("Tokens estimated as bytes / 4. Per call:")
print()
for r in rows:
    if r[1] not in ("manual", "session"):
        print(f"    {r[0]:4} {r[1]:10} {int(r[3]):6} B  {'call' if r[4] == '1' else 'free'}  {r[2]}" + (f"  (exit {r[5]})" if r[5] != "0" else ""))
PY
echo
echo "Command: scripts/bench-mate.sh --orig <EvanAgee/firstmate clone or URL> (needs cargo build first)"
exit "$rc"
