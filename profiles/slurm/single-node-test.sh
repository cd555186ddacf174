#!/usr/bin/env bash
# Test profiles/slurm against a real single-node Slurm started here, then remove everything.
#
# Needs root, Debian's slurmctld and slurmd (apt-get install slurmctld slurmd), and
# snakemake-executor-plugin-slurm importable by the snakemake on PATH (or on PYTHONPATH).
# Starts slurmctld and slurmd in a temporary directory (no munge, no accounting, no cgroups:
# auth/none, proctrack/linuxproc), runs a one-rule workflow with `--profile profiles/slurm`,
# checks that its job ran inside a Slurm allocation (its output holds SLURM_JOB_ID), stops both
# daemons and deletes the directory. Prints PASS or the daemons' logs and exits non-zero.
# The configuration must be at Slurm's default path, /etc/slurm/slurm.conf: the plugin's job step
# drops every SLURM_* variable (SLURM_CONF too) before its nested srun. So the test refuses to run
# where that file exists (a real Slurm's), and removes the one it wrote.
set -euo pipefail
profile=$(cd "$(dirname "$0")" && pwd)
for tool in slurmctld slurmd sbatch squeue snakemake; do
  command -v "$tool" >/dev/null || { echo "single-node-test: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "single-node-test: run as root (slurmd starts jobs as their user)" >&2; exit 2; }

conf=/etc/slurm/slurm.conf
[ ! -e "$conf" ] || { echo "single-node-test: $conf exists (a Slurm of this machine's); not touching it" >&2; exit 2; }

dir=$(mktemp -d /tmp/perflab-slurm.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -f "$conf"
  rm -rf "$dir"
}
trap cleanup EXIT
node=$(hostname -s)
read -r ctld_port slurmd_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
mkdir -p "$dir/state" "$dir/spool" "$dir/work"
cat >"$dir/slurm.conf" <<EOF
ClusterName=perflabtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p "$(dirname "$conf")"
cp "$dir/slurm.conf" "$conf"
export SLURM_CONF=$conf
slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 & pids+=($!)
for _ in $(seq 60); do
  sinfo -h -N -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.5
done
sinfo -h -N -o %T | grep -qx idle || { echo "single-node-test: node never became idle" >&2; tail -n 20 "$dir"/*.log >&2; exit 1; }

cat >"$dir/work/Snakefile" <<'EOF'
rule all:
    input: "job.txt"

rule job:
    output: "job.txt"
    resources: runtime=2, mem_mb=100
    shell: "echo $SLURM_JOB_ID > {output}"
EOF
# No accounting here: job states come from squeue; no account to charge.
if ! (cd "$dir/work" && timeout 120 snakemake --profile "$profile" --slurm-status-command squeue \
      --slurm-no-account --slurm-init-seconds-before-status-checks 1 --seconds-between-status-checks 1 \
      --latency-wait 5 --jobs 1) >"$dir/snakemake.out" 2>&1; then
  echo "single-node-test: snakemake failed" >&2
  tail -n 30 "$dir/snakemake.out" "$dir"/*.log >&2
  find "$dir/work/.snakemake/slurm_logs" -name '*.log' -exec tail -n 30 {} + >&2 2>/dev/null
  exit 1
fi
grep -qE '^[0-9]+$' "$dir/work/job.txt" || { echo "single-node-test: job.txt has no Slurm job id" >&2; exit 1; }
echo "PASS: rule 'job' ran as Slurm job $(cat "$dir/work/job.txt") through profiles/slurm"
