#!/usr/bin/env bash
# Install the Debian packages perflab needs (benchmarks, sshd, namespaces, TeX), only if missing.
set -euo pipefail
# The list comes from scripts/debian-packages.py (a base list plus what the tool adapters
# and library modules declare); it needs only python3, installed first when absent.
if ! command -v python3 >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "python3 is missing; install it as root: apt-get install -y python3" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 >/dev/null
fi
list=$(python3 "$(dirname "$0")/debian-packages.py")
mapfile -t packages <<<"$list"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "Debian packages: all ${#packages[@]} present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "Debian packages missing: ${missing[*]}" >&2
  echo "Install them as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts services on install; the lab runs its own sshd per host instead, and its own
# Ceph daemons (perflab.hosts.lab.ceph) in the lab hosts, never the machine's Ceph services.
systemctl disable --now ssh >/dev/null 2>&1 || true
systemctl disable --now slurmctld slurmd munge >/dev/null 2>&1 || true
systemctl disable --now ceph.target ceph-mon.target ceph-mgr.target ceph-osd.target ceph-crash.service \
  rbdmap.service >/dev/null 2>&1 || true
