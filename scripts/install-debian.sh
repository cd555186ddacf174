#!/usr/bin/env bash
# Install the Debian packages perflab needs (benchmarks, sshd, namespaces, TeX), only if missing.
set -euo pipefail
packages=(
  python3 python3-venv openssh-server openssh-client iproute2 procps psmisc iputils-ping util-linux coreutils
  iperf3 iperf fio sysstat sysbench stress-ng hpcc
  latexmk texlive-latex-base texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended
  lmodern fonts-lmodern poppler-utils
)
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
# Debian starts services on install; the lab runs its own sshd per host instead.
systemctl disable --now ssh >/dev/null 2>&1 || true
