#!/usr/bin/env bash
# Bring up a single-node SLURM (slurmctld + slurmd + munged) for tests and CI.
#
#   tests/slurm/start_cluster.sh [STATE_DIR]      # default STATE_DIR: $EQA_SLURM_DIR or /tmp/eqa_slurm
#   source /tmp/eqa_slurm/env.sh                   # or: eval "$(tests/slurm/start_cluster.sh)"
#
# Idempotent: installs slurm-wlm/munge when missing, (re)writes STATE_DIR/slurm.conf, starts only
# the daemons that are not already running (restarts them when slurm.conf changed), then waits
# until `sinfo` shows the node idle. stdout carries only `export ...` lines; progress goes to stderr.
# Accounting is off, so STATE_DIR/bin/sacct (a stand-in built on `scontrol show job`) answers
# job-state queries for submitit. Needs root (re-executes itself with sudo otherwise).
# Env: EQA_SLURM_CTLD_PORT (6817), EQA_SLURM_SLURMD_PORT (6818), EQA_SLURM_TIMEOUT_S (60).
set -euo pipefail

STATE_DIR=${1:-${EQA_SLURM_DIR:-/tmp/eqa_slurm}}
STATE_DIR=$(realpath -m "$STATE_DIR")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CTLD_PORT=${EQA_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${EQA_SLURM_SLURMD_PORT:-6818}
TIMEOUT_S=${EQA_SLURM_TIMEOUT_S:-60}
T0=$(date +%s.%N)

log() { echo "[start_cluster] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null || die "must run as root (no sudo available)"
  log "not root: re-executing with sudo"
  exec sudo -E "$0" "$STATE_DIR"
fi

# pid_alive PIDFILE NAME: the pid file names a live process whose command is NAME.
pid_alive() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
    && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]]
}

# ---------------------------------------------------------------------------- install
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
  || ! command -v sinfo >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends slurm-wlm slurm-client munge >&2
  log "installed after $(elapsed) s"
fi

# ---------------------------------------------------------------------------- munge
MUNGE_KEY=/etc/munge/munge.key
MUNGE_PID=/run/munge/munged.pid
if [[ ! -s $MUNGE_KEY ]]; then
  log "creating munge key $MUNGE_KEY"
  mkdir -p /etc/munge
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$MUNGE_KEY" --force
  else
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
  fi
fi
chown munge:munge "$MUNGE_KEY" /etc/munge
chmod 0400 "$MUNGE_KEY"
chmod 0700 /etc/munge
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge

mkdir -p "$STATE_DIR"/{state,spool,log,run,bin}
chmod 0755 "$STATE_DIR"

if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "munged already running"
else
  log "starting munged"
  # --force removes a stale socket left by a munged that died; we only get here if none answers.
  runuser -u munge -- /usr/sbin/munged --force
  touch "$STATE_DIR/run/munged.ours"  # stop_cluster.sh stops munged only if we started it
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
fi

# ---------------------------------------------------------------------------- slurm.conf
CONF="$STATE_DIR/slurm.conf"
CPUS=$(nproc)
MEM_TOTAL=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)  # = free -m total
MARGIN=$(( MEM_TOTAL / 20 > 256 ? MEM_TOTAL / 20 : 256 ))  # 5% (at least 256 MB) for the OS
REAL_MEM=$(( MEM_TOTAL - MARGIN ))
DEF_MEM_PER_CPU=$(( REAL_MEM / CPUS ))  # jobs without --mem get a CPU-proportional share

NEW_CONF=$(cat <<EOF
# Single-node test cluster written by tests/slurm/start_cluster.sh -- rewritten on every start.
ClusterName=eqa
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
# Requeued jobs become eligible cred_expire+1 s after the requeue (default 120 s): keep tests fast.
AuthInfo=cred_expire=5
CryptoType=crypto/munge
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Final job states also land here (the sacct stand-in reads it once a job left slurmctld's memory).
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE_DIR/log/jobcomp.txt
SchedulerType=sched/backfill
# Schedule every few seconds, not minutes (picks up requeued jobs quickly on an idle cluster).
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$DEF_MEM_PER_CPU
# Finished jobs stay visible to scontrol/squeue (and so to the sacct stand-in) for an hour.
MinJobAge=3600
ReturnToService=2
JobRequeue=1
PreemptMode=OFF
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
StateSaveLocation=$STATE_DIR/state
SlurmdSpoolDir=$STATE_DIR/spool
SlurmctldPidFile=$STATE_DIR/run/slurmctld.pid
SlurmdPidFile=$STATE_DIR/run/slurmd.pid
SlurmctldLogFile=$STATE_DIR/log/slurmctld.log
SlurmdLogFile=$STATE_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No GresTypes: the node declares no GPUs (override hydra.launcher.gpus_per_node=0).
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
)

CONF_CHANGED=0
if [[ ! -f $CONF ]] || [[ $(<"$CONF") != "$NEW_CONF" ]]; then
  [[ -f $CONF ]] && CONF_CHANGED=1
  printf '%s\n' "$NEW_CONF" > "$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
  log "wrote $CONF (CPUs=$CPUS RealMemory=$REAL_MEM)"
fi
export SLURM_CONF="$CONF"

install -m 0755 "$HERE/sacct" "$STATE_DIR/bin/sacct"

cat > "$STATE_DIR/env.sh" <<EOF
# Source me: the test SLURM cluster in $STATE_DIR (written by tests/slurm/start_cluster.sh).
export SLURM_CONF=$CONF
case ":\$PATH:" in *":$STATE_DIR/bin:"*) ;; *) export PATH="$STATE_DIR/bin:\$PATH" ;; esac
EOF

# ---------------------------------------------------------------------------- daemons
CTLD_PID="$STATE_DIR/run/slurmctld.pid"
SLURMD_PID="$STATE_DIR/run/slurmd.pid"
if [[ $CONF_CHANGED == 1 ]] && { pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd; }
then
  log "slurm.conf changed: restarting the daemons"
  "$HERE/stop_cluster.sh" --keep-munge --keep-jobs "$STATE_DIR" >&2
fi

if pid_alive "$CTLD_PID" slurmctld; then
  log "slurmctld already running (pid $(<"$CTLD_PID"))"
else
  log "starting slurmctld"
  slurmctld -f "$CONF"
fi
if pid_alive "$SLURMD_PID" slurmd; then
  log "slurmd already running (pid $(<"$SLURMD_PID"))"
else
  log "starting slurmd"
  slurmd -f "$CONF" -N localhost
fi

# ---------------------------------------------------------------------------- wait for idle
deadline=$(( $(date +%s) + TIMEOUT_S ))
resumed=0
state=""
while :; do
  state=$(sinfo -h -N -n localhost -o '%t' 2>/dev/null | head -1 || true)
  case $state in
    idle | mix | alloc) break ;;  # schedulable (mix/alloc: jobs kept across a restart)
    drain* | drng* | down | fail*)
      if [[ $resumed == 0 ]]; then
        log "node is '$state' (reason: $(sinfo -h -N -n localhost -o '%E')); resuming it"
        scontrol update NodeName=localhost State=RESUME >&2 || true
        resumed=1
      fi
      ;;
  esac
  if (( $(date +%s) >= deadline )); then
    log "node not idle after ${TIMEOUT_S}s (state '${state:-<no answer>}'); log tails:"
    tail -n 20 "$STATE_DIR/log/slurmctld.log" "$STATE_DIR/log/slurmd.log" >&2 || true
    exit 1
  fi
  sleep 0.3
done

log "node localhost is $state after $(elapsed) s; source $STATE_DIR/env.sh"
sinfo >&2
cat <<EOF
export SLURM_CONF=$CONF
export PATH="$STATE_DIR/bin:\$PATH"
EOF
