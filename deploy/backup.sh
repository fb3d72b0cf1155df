#!/usr/bin/env bash
# Back up a serving grasp's data dir (docs/operations.md, "Backups"):
#
#   deploy/backup.sh --unit grasp /var/lib/grasp /srv/backup/grasp     under systemd
#   deploy/backup.sh --pid 1234   ./data         /srv/backup/grasp     any other way
#
# DEST is a directory this script keeps in step with the data dir; run it again to
# refresh it (only what changed is copied). Needs rsync.
#
# Pass 1 copies the data dir while grasp serves. Pass 2 pauses grasp and the git
# processes it runs (SIGSTOP to the unit's cgroup, or to the process group of
# --pid), copies what changed since pass 1 began, and resumes them (SIGCONT), also
# when this script fails or is interrupted. The copy is then exactly what a power
# cut at the pause would have left on disk, which grasp recovers from: every event
# acknowledged with OK true before the pause, every completed push, and a badger
# store that opens. Clients only notice a pause of pass 2's length (the files
# written since pass 1, plus badger's write-ahead log and value-log files).
#
# Restore: stop grasp, replace the data dir by a copy of DEST (rsync -a --delete
# DEST/ /var/lib/grasp/, then chown -R grasp:grasp for the unit), start grasp.
# With store.backend = "postgres" the events live in PostgreSQL: back it up with
# pg_dump as well; this script still covers the git repositories and side tables.
set -euo pipefail

usage() { echo "usage: $0 (--unit NAME | --pid PID) DATA_DIR DEST" >&2; exit 2; }
[ $# = 4 ] || usage
mode=$1 target=$2 src=${3%/} dst=${4%/}
case $mode in --unit | --pid) ;; *) usage ;; esac
command -v rsync >/dev/null || { echo "backup: rsync not found (apt-get install rsync)" >&2; exit 1; }
[ -d "$src/store" ] || { echo "backup: $src is not a grasp data dir (no store/)" >&2; exit 1; }
case "$(realpath -m "$dst")/" in "$(realpath "$src")"/*) echo "backup: DEST must not be inside the data dir" >&2; exit 1 ;; esac
mkdir -p "$dst"

# pids lists every process to pause: the unit's cgroup, or the process group.
pids() {
  if [ "$mode" = --unit ]; then
    local cg
    cg=$(systemctl show --property=ControlGroup --value "$target")
    [ -n "$cg" ] || { echo "backup: unit $target is not running" >&2; return 1; }
    cat "/sys/fs/cgroup$cg/cgroup.procs"
  else
    local pgid
    pgid=$(ps -o pgid= -p "$target" | tr -d ' ')
    [ -n "$pgid" ] || { echo "backup: no process $target" >&2; return 1; }
    [ "$pgid" != "$(ps -o pgid= -p $$ | tr -d ' ')" ] || { echo "backup: grasp runs in this script's process group; start it in its own" >&2; return 1; }
    pgrep -g "$pgid"
  fi
}

signal() {
  if [ "$mode" = --unit ]; then
    systemctl kill --signal="$1" "$target"
  else
    kill -s "$1" -- "-$(ps -o pgid= -p "$target" | tr -d ' ')"
  fi
}

# stopped waits until every thread of every process is in the stopped state:
# kill returns before a running thread on another CPU has stopped.
stopped() {
  local i pid task state
  for i in $(seq 1 200); do
    state=T
    for pid in $(pids); do
      for task in /proc/"$pid"/task/*/stat; do
        [ -e "$task" ] || continue
        case $(awk '{print $3}' "$task" 2>/dev/null) in T | t | "") ;; *) state=R ;; esac
      done
    done
    [ $state = T ] && return 0
    sleep 0.05
  done
  echo "backup: grasp did not stop within 10 s" >&2
  return 1
}

marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
# Everything modified from a minute before pass 1 on is copied again while
# paused: rsync's size-and-mtime check misses a same-size rewrite within the
# same second (a git ref), and badger writes some files through mmap, which
# does not always move their mtime.
touch -d '-1 minute' "$marker"

pids >/dev/null
echo "backup: pass 1, copying $src while grasp serves"
rsync -a --sparse --delete "$src/" "$dst/"

paused=0
resume() {
  if [ $paused = 1 ]; then
    signal CONT || true
    paused=0
    echo "backup: resumed"
  fi
}
trap 'resume; rm -f "$marker"' EXIT
trap 'exit 130' INT TERM

signal STOP
paused=1
stopped
echo "backup: paused"
rsync -a --sparse --delete "$src/" "$dst/"
(cd "$src" && find . -type f \( -newer "$marker" -o \( -path './store/*' ! -name '*.sst' \) \) -print0) |
  rsync -a --sparse --ignore-times --from0 --files-from=- "$src/" "$dst/"
resume
sync -f "$dst"
echo "backup: done, $dst holds the data dir as of the pause"
