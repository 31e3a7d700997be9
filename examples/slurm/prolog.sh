#!/bin/sh
# aiaudit pre-flight check as a Slurm Prolog: keep jobs off a node that is not fit to train.
#
# Install (on every compute node):
#   install -m 0755 prolog.sh /etc/slurm/prolog.d/50-aiaudit.sh
#   # slurm.conf (same on all nodes; then `scontrol reconfigure`):
#   Prolog=/etc/slurm/prolog.d/*
#   PrologFlags=Alloc          # run at allocation, on every allocated node, before the job
#                              # starts (without it the prolog runs at the first step).
#                              # Contain implies Alloc and is only needed by pam_slurm_adopt.
#   PrologEpilogTimeout=60     # Slurm's own limit: keep it above this script's worst case,
#                              # AIAUDIT_TIMEOUT + 7 s (the outer deadline is TIMEOUT + 5,
#                              # then `timeout -k 2` waits 2 s more before SIGKILL); with
#                              # the default AIAUDIT_TIMEOUT=10 that is 17 s.
#
# Settings: slurmd gives a prolog only SLURM_* variables, so they come from
# /etc/aiaudit/prolog.env (KEY=value lines for the keys listed below, nothing is
# executed), e.g.
#   AIAUDIT_FAIL_ON=critical
#   AIAUDIT_TIMEOUT=20
# A variable already in the environment (a manual run) wins over the file.
#
# What happens:
#   exit 0  -> the job starts.  Only failures at or above AIAUDIT_FAIL_ON make the exit
#              non-zero; a rule that could not be evaluated (unreadable file, the deadline)
#              does not drain the node unless AIAUDIT_ON_ERROR=fail.
#   exit 1  -> slurmd drains the node and requeues the job (standard Prolog behaviour).
#              The one-line reason ("aiaudit: FAIL MEMLOCK-... (...); 2 more") goes to
#              stderr (slurmd's log), to the journal (logger -t aiaudit-prolog) and to
#              $AIAUDIT_REASON_FILE, so `scontrol show node` reason "Prolog error" can be
#              explained from the node.  After fixing: scontrol update nodename=X state=resume
#   aiaudit missing, a bad argument (2) or an aiaudit bug (4) never drains: a broken
#              install must not drain the whole cluster; it is logged instead.
#   Every exit that does not drain removes $AIAUDIT_REASON_FILE: a reason left by an
#   earlier job would explain a drain this run did not cause.
#
# This script runs no Slurm command (no scontrol/sinfo/squeue: they would hit slurmctld
# from every node at every job start).  The training user comes from $SLURM_JOB_USER,
# which slurmd sets in the prolog environment.  Extra arguments are passed to aiaudit.
#
# The keys /etc/aiaudit/prolog.env may set (root-owned, mode 0644; each optional):
#   AIAUDIT=/usr/local/bin/aiaudit    AIAUDIT_RULESET=slurm-preflight
#   AIAUDIT_FAIL_ON=high              AIAUDIT_ON_ERROR=pass     AIAUDIT_TIMEOUT=10
#   AIAUDIT_REPORT=/run/aiaudit/prolog-last.json
#   AIAUDIT_REASON_FILE=/run/aiaudit/prolog.reason
#   AIAUDIT_STATE=/var/lib/aiaudit/prolog-state.json   (unset by default: compare with the
#       previous prolog's scan, so RDMA-LINK-FLAPPING judges error counters grown since
#       then and the kernel-log rules look only at lines since then; $AIAUDIT_REPORT then
#       lists the changes, the exit code and the reason still come from the whole scan)
#
# Every job start waits for this script, so it starts no process it can do without: one
# `timeout` and one `aiaudit` when the node is fit (bench/prolog_bench.py --script).

# Slurm runs prologs without a search path.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# slurmd runs the prolog as SlurmdUser (root) without HOME: Python would then look the
# user up in the passwd database (NSS) at every start, to find its per-user site directory.
HOME=${HOME:-/root}
export HOME

# The settings file is read, not run: only KEY=value lines for the keys below count (the
# value may be in single or double quotes); a broken file cannot stop the script, and so
# cannot drain the node.
PROLOG_ENV=${AIAUDIT_PROLOG_ENV:-/etc/aiaudit/prolog.env}
if [ -r "$PROLOG_ENV" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            AIAUDIT=*|AIAUDIT_RULESET=*|AIAUDIT_FAIL_ON=*|AIAUDIT_ON_ERROR=*|\
            AIAUDIT_TIMEOUT=*|AIAUDIT_REPORT=*|AIAUDIT_REASON_FILE=*|AIAUDIT_STATE=*) ;;
            *) continue ;;
        esac
        name=${line%%=*}
        value=${line#*=}
        case $value in
            \"*\") value=${value#\"}; value=${value%\"} ;;
            \'*\') value=${value#\'}; value=${value%\'} ;;
        esac
        # the environment wins; $name is one of the names above, $value is not expanded
        eval "[ -n \"\${$name+x}\" ]" || eval "$name=\$value"
    done < "$PROLOG_ENV"
fi

AIAUDIT=${AIAUDIT:-/usr/local/bin/aiaudit}
RULESET=${AIAUDIT_RULESET:-slurm-preflight}
FAIL_ON=${AIAUDIT_FAIL_ON:-high}
ON_ERROR=${AIAUDIT_ON_ERROR:-pass}
TIMEOUT=${AIAUDIT_TIMEOUT:-10}
case $TIMEOUT in
    ''|*[!0-9]*) TIMEOUT=10 ;;  # whole seconds: it is also the outer deadline's arithmetic
esac
REPORT=${AIAUDIT_REPORT:-/run/aiaudit/prolog-last.json}
REASON_FILE=${AIAUDIT_REASON_FILE:-/run/aiaudit/prolog.reason}
if [ -n "${AIAUDIT_STATE:-}" ]; then
    set -- --state "$AIAUDIT_STATE" "$@"
fi

log() {
    printf '%s\n' "$1" >&2
    if command -v logger >/dev/null 2>&1; then
        logger -t aiaudit-prolog -- "job ${SLURM_JOB_ID:-?}: $1" 2>/dev/null || :
    fi
}

# The node is not drained by this run: no earlier run's reason may stand for it (a
# stale reason misleads whoever reads it after the node was resumed).  rm only when
# there is something to remove: a fit node starts no process it can do without.
clear_reason() {
    if [ -e "$REASON_FILE" ] || [ -L "$REASON_FILE" ]; then
        rm -f "$REASON_FILE"
    fi
}

# dirname(1) without a process: sets $dir
dir_of() {
    case $1 in
        */*) dir=${1%/*}; dir=${dir:-/} ;;
        *) dir=. ;;
    esac
}

if [ ! -x "$AIAUDIT" ]; then
    log "aiaudit: not installed at $AIAUDIT; pre-flight check skipped"
    clear_reason
    exit 0
fi
dir_of "$REPORT"; report_dir=$dir
dir_of "$REASON_FILE"
if [ ! -d "$report_dir" ] || [ ! -d "$dir" ]; then
    mkdir -p "$report_dir" "$dir" 2>/dev/null
fi
# No report of an earlier job stands for this one: the scan replaces $REPORT atomically
# when it writes one, and every exit below that has no new report removes it.

# A second, outer deadline (coreutils timeout, not Slurm): even a read stuck in the
# kernel cannot hold the job longer than the scan deadline plus 5 seconds.
# The JSON report goes to $REPORT for the admin (nothing to stdout); stderr carries the
# one-line reason.
stderr=$(timeout -k 2 $((TIMEOUT + 5)) "$AIAUDIT" scan --prolog \
    --ruleset "$RULESET" --fail-on "$FAIL_ON" --on-error "$ON_ERROR" --timeout "$TIMEOUT" \
    --output "json:$REPORT" "$@" 2>&1 >/dev/null)
rc=$?
# the reason is the last "aiaudit: " line (anything else on stderr is noise, e.g. warnings)
reason=
while IFS= read -r line; do
    case $line in
        "aiaudit: "*) reason=$line ;;
    esac
done <<END
$stderr
END

case $rc in
    0)
        # Nothing to drain for; a warning (rules not evaluated) is still logged.
        [ -n "$reason" ] && log "$reason"
        clear_reason
        exit 0 ;;
    1|3)
        [ -n "$reason" ] || reason="aiaudit: exit $rc"
        log "$reason"
        printf '%s\n' "$reason" > "$REASON_FILE"
        exit 1 ;;
    124|137)
        rm -f "$REPORT"  # killed: whatever it wrote is incomplete
        reason="aiaudit: did not finish within $((TIMEOUT + 5))s (stuck read?)"
        log "$reason"
        if [ "$ON_ERROR" = fail ]; then
            printf '%s\n' "$reason" > "$REASON_FILE"
            exit 1
        fi
        clear_reason
        exit 0 ;;
    *)
        rm -f "$REPORT"
        log "aiaudit: pre-flight check itself failed (exit $rc), node not drained: $stderr"
        clear_reason
        exit 0 ;;
esac
