#!/usr/bin/env bash
# The remote fleet view benchmark (docs/remote.md): HOSTS hosts × TASKS
# tasks, each host a real sshd on 127.0.0.1 (its own port, host key and
# master connection) serving the fm-remote account, whose far homes hold
# the tasks (a meta and a 50-line status log each, no panes). The captain
# home names every task's host. Prints the cold run and the median and
# minimum of RUNS warm runs of `fm-crew-state` (table), in milliseconds.
#
# Needs root (an sshd serving another account) and openssh-server
# (scripts/deps.sh), and a release build: cargo build --release.
# Usage: scripts/bench-remote.sh [HOSTS] [TASKS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-4} tasks=${2:-250} runs=${3:-20}
account=fm-remote
[ "$(id -u)" -eq 0 ] || { echo "bench-remote: needs root" >&2; exit 3; }
[ -x /usr/sbin/sshd ] || { echo "bench-remote: needs /usr/sbin/sshd (scripts/deps.sh)" >&2; exit 3; }
[ -x target/release/fm-crew-state ] || { echo "bench-remote: cargo build --release first" >&2; exit 3; }
getent passwd "$account" >/dev/null || useradd --create-home --shell /bin/sh "$account"
[ "$(passwd --status "$account" | awk '{print $2}')" != L ] || usermod --password '*' "$account"
acct_home=$(getent passwd "$account" | cut -d: -f6)
mkdir -p /run/sshd "$acct_home"

work=$(mktemp -d /tmp/fm-bench-remote-XXXXXX)
far_root="$acct_home/fm-bench-$$"
pids=()
ports=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for s in "$work"/captain/state/ssh/*; do
    [ -S "$s" ] && ssh -o ControlPath="$s" -O exit x 2>/dev/null || true
  done
  rm -rf "$work" "$far_root"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$far_root/bin" "$work/captain/config" "$work/captain/data" "$work/captain/state"
cp target/release/fm-* "$far_root/bin/"
ssh-keygen -q -t ed25519 -N '' -f "$work/id_ed25519"
cp "$work/id_ed25519.pub" "$work/authorized_keys"
cfg="$work/captain/config/firstmate.toml"
: > "$cfg"
: > "$work/ssh_config"
: > "$work/known_hosts"
now=$(date +%s)
log=""
for i in $(seq 1 50); do log+="note [at=$((now - 60))]: line $i"$'\n'; done
for h in $(seq 1 "$hosts"); do
  name="h$h"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  ssh-keygen -q -t ed25519 -N '' -f "$work/host_$name"
  echo "$name $(cat "$work/host_$name.pub")" >> "$work/known_hosts"
  cat > "$work/sshd_$name" <<CFG
ListenAddress 127.0.0.1:$port
HostKey $work/host_$name
PidFile none
AuthorizedKeysFile $work/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowUsers $account
PrintMotd no
MaxSessions 64
CFG
  cat >> "$work/ssh_config" <<CFG
Host $name
  HostName 127.0.0.1
  Port $port
  User $account
  IdentityFile $work/id_ed25519
  IdentitiesOnly yes
  HostKeyAlias $name
  UserKnownHostsFile $work/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
CFG
  /usr/sbin/sshd -D -e -f "$work/sshd_$name" 2>>"$work/sshd.log" &
  pids+=($!)
  ports+=("$port")
  far="$far_root/$name"
  mkdir -p "$far/config" "$far/data" "$far/state"
  : > "$far/config/firstmate.toml"
  for t in $(seq -w 1 "$tasks"); do
    id="$name-t$t"
    printf 'kind=scout\n' > "$far/state/$id.meta"
    printf '%sworking [at=%s]: on it\n' "$log" "$now" > "$far/state/$id.status"
    printf 'kind=scout\nhost=%s\n' "$name" > "$work/captain/state/$id.meta"
  done
  cat >> "$cfg" <<CFG
[hosts.$name]
destination = "$name"
home = "$far"
ssh_options = ["-F", "$work/ssh_config"]
bin = "$far_root/bin"
timeout_ms = 5000
CFG
done
chown -R "$account:" "$far_root"
for port in "${ports[@]}"; do
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
done
export FM_HOME="$work/captain"
ms() {
  local t0 t1
  t0=$(date +%s%N)
  target/release/fm-crew-state > "$work/out"
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))
}
cold=$(ms)
rows=$(($(wc -l < "$work/out") - 1))
working=$(grep -c ' working ' "$work/out" || true)
[ "$working" -eq $((hosts * tasks)) ] || { echo "bench-remote: $working of $((hosts * tasks)) rows working:" >&2; head -5 "$work/out" >&2; exit 1; }
warm=()
for _ in $(seq "$runs"); do warm+=("$(ms)"); done
sorted=$(printf '%s\n' "${warm[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
min=$(echo "$sorted" | head -1)
fmt() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us/1000}'; }
echo "fleet view, $hosts hosts x $tasks tasks ($rows rows, all working), loopback ssh, multiplexed:"
echo "  cold (new connections): $(fmt "$cold")"
echo "  warm, $runs runs: median $(fmt "$median"), min $(fmt "$min")"
# Where a warm view's time goes, each part timed on its own (median of
# RUNS): the link (a multiplexed ssh round trip running `true` on h1), the
# far read (h1's own `fm-crew-state --json`, run there as the far account,
# no ssh), and the captain's own part with no host configured (its 1,000
# metas read, each row then unknown).
median_of() {
  local xs=() t0 t1
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N); "$@" > /dev/null; t1=$(date +%s%N)
    xs+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${xs[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
link() {
  ssh -T -o BatchMode=yes -o ControlMaster=auto -o "ControlPath=$work/captain/state/ssh/%C" \
    -o ControlPersist=300 -F "$work/ssh_config" -- h1 true
}
far_read() {
  runuser -u "$account" -- env FM_HOME="$far_root/h1" LC_ALL=C "$far_root/bin/fm-crew-state" --json
}
captain_only() {
  FM_HOME="$work/captain-nohosts" target/release/fm-crew-state
}
mkdir -p "$work/captain-nohosts/config"
cp -r "$work/captain/state" "$work/captain-nohosts/state"
rm -rf "$work/captain-nohosts/state/ssh"
mkdir -p "$work/captain-nohosts/data"
: > "$work/captain-nohosts/config/firstmate.toml"
echo "  breakdown (medians of $runs): link $(fmt "$(median_of link)"), far read of 250 rows $(fmt "$(median_of far_read)"), captain's part alone $(fmt "$(median_of captain_only)")"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
