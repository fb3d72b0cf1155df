#!/usr/bin/env bash
# Back up a serving grasp (docs/operations.md, "Backups"):
#
#   deploy/backup.sh /etc/grasp/grasp.toml /srv/backup/grasp
#   deploy/backup.sh --keep 14 --grasp /usr/local/bin/grasp /etc/grasp/grasp.toml /srv/backup/grasp
#
# Each run asks the running server (grasp admin backup, over its loopback
# metrics listener) for a consistent backup while it serves, written into
# DIR/grasp-<UTC time>; DIR/latest then points at it, and only the newest
# --keep (default 7) are kept. grasp copies each repository under its lock and
# then dumps the store at one instant: the backup holds every event
# acknowledged with OK true before the run began and every completed push.
# Nothing is paused; a push to a repository waits while that repository is
# copied.
#
# With the server stopped, pass --offline: the data dir is then read directly.
# Run it as the service user or root: grasp admin sends the admin token,
# which only they can read (metrics.admin_token_file, <data_dir>/admin.token).
#
# Restore: stop grasp, then
#   grasp admin restore --config /etc/grasp/grasp.toml DIR/latest NEW_DATA_DIR
# (NEW_DATA_DIR new or empty), point server.data_dir at it (or move it into
# place), chown -R grasp:grasp it for the unit, start grasp.
# With store.backend = "postgres" the events live in PostgreSQL: back them up
# with pg_dump as well; this script still covers the repositories and the
# side tables.
set -euo pipefail

usage() { echo "usage: $0 [--keep N] [--grasp PATH] [--offline] CONFIG DIR" >&2; exit 2; }
keep=7 grasp=grasp offline=()
while [ $# -gt 2 ]; do
  case $1 in
    --keep) [ $# -gt 3 ] || usage; keep=$2; shift 2 ;;
    --grasp) [ $# -gt 3 ] || usage; grasp=$2; shift 2 ;;
    --offline) offline=(--offline); shift ;;
    *) usage ;;
  esac
done
[ $# = 2 ] || usage
config=$1 dir=${2%/}
case $keep in '' | *[!0-9]* | 0) echo "backup: --keep wants a positive number" >&2; exit 2 ;; esac
command -v "$grasp" >/dev/null || { echo "backup: $grasp not found (pass --grasp PATH)" >&2; exit 1; }
[ -r "$config" ] || { echo "backup: cannot read $config" >&2; exit 1; }
mkdir -p "$dir"

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
name=grasp-$(date -u +%Y%m%dT%H%M%SZ)
# Two runs within a second get -2, -3, ... (which sort after the first).
n=1 base=$name
while [ -e "$dir/$name" ]; do n=$((n + 1)) name=$base-$n; done
partial=$dir/.$name.partial
rm -rf "$partial"
trap 'rm -rf "$partial"' EXIT
echo "backup: asking grasp for a backup into $dir/$name"
"$grasp" admin backup --config "$config" "${offline[@]}" "$partial"
mv "$partial" "$dir/$name"
ln -sfn "$name" "$dir/latest.tmp"
mv -T "$dir/latest.tmp" "$dir/latest"

# Older generations beyond --keep, oldest first (the names sort by time).
mapfile -t gens < <(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'grasp-*' -printf '%f\n' | sort)
for ((i = 0; i < ${#gens[@]} - keep; i++)); do
  rm -rf "${dir:?}/${gens[i]}"
  echo "backup: removed the old ${gens[i]}"
done
echo "backup: done, $dir/$name holds the data dir as of $started"
