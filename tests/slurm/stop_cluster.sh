#!/usr/bin/env bash
# Stop the test SLURM cluster started by tests/slurm/start_cluster.sh, by its pid files.
#
#   tests/slurm/stop_cluster.sh [--keep-jobs] [--keep-munge] [STATE_DIR]
#
# By default active jobs are cancelled first (so no slurmstepd outlives slurmd) and munged is
# stopped too if start_cluster.sh started it. STATE_DIR (default $EQA_SLURM_DIR or /tmp/eqa_slurm)
# is kept: slurmctld's saved state, logs and the job-completion file survive a restart.
set -euo pipefail

KEEP_JOBS=0
KEEP_MUNGE=0
STATE_DIR=""
for arg in "$@"; do
  case $arg in
    --keep-jobs) KEEP_JOBS=1 ;;
    --keep-munge) KEEP_MUNGE=1 ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) STATE_DIR=$arg ;;
  esac
done
STATE_DIR=$(realpath -m "${STATE_DIR:-${EQA_SLURM_DIR:-/tmp/eqa_slurm}}")
log() { echo "[stop_cluster] $*" >&2; }

if [[ $EUID -ne 0 ]] && command -v sudo >/dev/null; then
  exec sudo -E "$0" "$@"
fi

# stop_pid PIDFILE NAME: SIGTERM the process named in PIDFILE (if it is NAME), SIGKILL after 10 s.
stop_pid() {
  local pidfile=$1 name=$2 pid
  if [[ ! -s $pidfile ]]; then
    log "$name: no pid file ($pidfile)"
    return 0
  fi
  pid=$(<"$pidfile")
  if ! [[ $pid =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null \
    || [[ $(cat "/proc/$pid/comm" 2>/dev/null) != "$name" ]]; then
    log "$name: not running (stale pid file)"
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "$name (pid $pid) stopped"
}

CONF="$STATE_DIR/slurm.conf"
if [[ $KEEP_JOBS == 0 && -f $CONF ]] && [[ -s $STATE_DIR/run/slurmctld.pid ]]; then
  export SLURM_CONF=$CONF
  active=$(timeout 10 squeue -h -t PENDING,RUNNING,SUSPENDED,CONFIGURING,COMPLETING -o '%i' \
    2>/dev/null | wc -l || true)
  if [[ ${active:-0} -gt 0 ]]; then
    log "cancelling $active active job(s)"
    timeout 10 scancel --partition=debug >&2 || true
    for _ in $(seq 50); do  # let slurmd reap the job steps
      [[ $(timeout 5 squeue -h -t RUNNING,COMPLETING -o '%i' 2>/dev/null | wc -l) == 0 ]] && break
      sleep 0.2
    done
  fi
fi

stop_pid "$STATE_DIR/run/slurmd.pid" slurmd
stop_pid "$STATE_DIR/run/slurmctld.pid" slurmctld
if [[ $KEEP_MUNGE == 0 && -f $STATE_DIR/run/munged.ours ]]; then
  stop_pid /run/munge/munged.pid munged
  rm -f "$STATE_DIR/run/munged.ours"
fi
