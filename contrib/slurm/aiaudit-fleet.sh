#!/bin/sh
# aiaudit-fleet.sh: scan every node of a Slurm allocation with aiaudit and aggregate.
#
#   aiaudit-fleet.sh [-N NODES] [-p PARTITION] [-w NODELIST] [-d SHARED_DIR]
#                    [-f FLEET_OPTION]... [-- SCAN_OPTION...]
#
# One task per node runs `aiaudit scan`.  Without -d the nodes stream their results as
# events (one self-contained JSON line each, so lines of different nodes may interleave
# in srun's output) into `aiaudit fleet -` on the node running this script.  With -d,
# each node writes SHARED_DIR/<hostname>.json (a directory every node can write, e.g.
# on the cluster file system) and `aiaudit fleet SHARED_DIR` reads them afterwards; the
# reports stay for `aiaudit fleet --since` next time.
#
# -f passes an option to `aiaudit fleet` (repeat it: -f --format -f json).  Options after
# -- go to every `aiaudit scan`.  The exit code is that of `aiaudit fleet` (0 pass, 1 fail,
# 3 not evaluated, 5 some node's report unusable; see `aiaudit fleet --help`); a node
# whose scan fails does not stop the others (srun --kill-on-bad-exit=0).
#
# Inside an allocation (salloc, sbatch) it scans the allocation's nodes; outside one, srun
# allocates -N NODES (default 1).  AIAUDIT names the aiaudit program (default: aiaudit,
# on PATH on every node); SRUN the srun program.
set -eu

AIAUDIT=${AIAUDIT:-aiaudit}
SRUN=${SRUN:-srun}
nodes=""
dir=""
set_srun=""
fleet_args=""

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

while getopts "N:p:w:d:f:h" opt; do
  case $opt in
    N) nodes=$OPTARG ;;
    p) set_srun="$set_srun --partition=$(quote "$OPTARG")" ;;
    w) set_srun="$set_srun --nodelist=$(quote "$OPTARG")" ;;
    d) dir=$OPTARG ;;
    f) fleet_args="$fleet_args $(quote "$OPTARG")" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

if [ -z "$nodes" ]; then
  nodes=${SLURM_JOB_NUM_NODES:-1}
fi

# srun: one task per node; a failing scan (exit 1) must not kill the other tasks
srun_cmd="$SRUN --nodes=$(quote "$nodes") --ntasks-per-node=1 --ntasks=$(quote "$nodes") \
--kill-on-bad-exit=0$set_srun"

if [ -z "$dir" ]; then
  # stream: an event is one line, and srun forwards whole lines of every task; the exit
  # status of a pipeline is that of its last command, aiaudit fleet
  eval "$srun_cmd $(quote "$AIAUDIT") scan --format events"' "$@"' \
    | eval "$(quote "$AIAUDIT") fleet - $fleet_args"
  exit $?
fi

mkdir -p "$dir"
# each node writes its own file, named on the node; a failing scan exits 1: not an error here
# shellcheck disable=SC2016  # expanded by the sh -c on each node, not here
node_script='d=$1; shift; exec "$0" scan -o "json:$d/$(hostname).json" "$@" >/dev/null'
eval "$srun_cmd sh -c $(quote "$node_script") $(quote "$AIAUDIT") $(quote "$dir")"' "$@"' \
  || true
eval "$(quote "$AIAUDIT") fleet $(quote "$dir") $fleet_args"
