#!/usr/bin/env bash
# Install everything coflowbed needs on Debian 12, as root: apt packages and a venv
# (.venv, from Debian's python so Debian's mininet is importable).  Idempotent: a second
# run only checks stamps and returns in well under a second.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
stamp="$repo/.install-stamp"
apt_packages=(mininet openvswitch-switch iputils-ping iproute2 bridge-utils psmisc procps
              python3-venv python3-dev iperf3 ethtool ruby shellcheck chromium chromium-driver)

want_stamp() {
    # Content of the stamp: what the install depends on.
    cat "$repo/requirements.txt" "$repo/pyproject.toml" "$0" | sha256sum | cut -d' ' -f1
}

apt_missing() {
    local p
    for p in "${apt_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

install_apt() {
    local missing
    missing=$(apt_missing)
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: missing apt packages ($missing); run as root" >&2
        exit 1
    fi
    echo "install.sh: apt-get install $missing"
    apt-get update -q
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
    # The project runs its own OVS in a private run directory; keep the distro
    # service (which needs the missing kernel module) from starting on boot.
    systemctl disable --now openvswitch-switch >/dev/null 2>&1 || true
}

install_venv() {
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(want_stamp)" ] && [ -x "$venv/bin/python" ]; then
        return 0
    fi
    echo "install.sh: creating $venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -r "$repo/requirements.txt"
    "$venv/bin/pip" install -q --no-deps --no-build-isolation -e "$repo"
    # Compile the simulator's numba kernels now rather than inside the first simulation.
    "$venv/bin/python" -m coflowbed.sim.warmup
    want_stamp > "$stamp"
}

install_extras() {
    # COFLOWBED_EXTRAS=packet[,ray]: the optional extras of pyproject.toml, pinned there.
    local extra
    for extra in ${COFLOWBED_EXTRAS:+${COFLOWBED_EXTRAS//,/ }}; do
        case "$extra" in
            packet) "$venv/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('ns3') is None)" \
                        || { echo "install.sh: pip install coflowbed[packet]"; "$venv/bin/pip" install -q 'ns3==3.44.post0'; } ;;
            ray) "$venv/bin/pip" install -q 'ray==2.60.0' ;;
            *) echo "install.sh: unknown extra '$extra' (packet, ray)" >&2; exit 2 ;;
        esac
    done
}

install_apt
install_venv
install_extras
