#!/usr/bin/env bash
# Provision the coflowbed VM (Ubuntu 24.04, run as root by `vagrant up`): p4lang's BMv2
# and p4c binary packages from the openSUSE Build Service, then everything `make test`
# needs through the project's own installer.  Idempotent.
set -euo pipefail

repo=${1:-/vagrant}
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=/dev/null
. /etc/os-release
obs_repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
keyring=/etc/apt/keyrings/home_p4lang.gpg
sources=/etc/apt/sources.list.d/home_p4lang.list

add_p4lang_repo() {
    # The repository's signing key, dearmored into its own keyring (signed-by).
    [ -s "$keyring" ] && [ -s "$sources" ] && return 0
    apt-get update -q
    apt-get install -y -q --no-install-recommends ca-certificates curl gnupg
    install -d -m 0755 /etc/apt/keyrings
    curl -fsSL "$obs_repo/Release.key" | gpg --dearmor --yes -o "$keyring"
    echo "deb [signed-by=$keyring] $obs_repo/ /" > "$sources"
}

install_p4lang() {
    add_p4lang_repo
    apt-get update -q
    apt-get install -y -q p4lang-bmv2 p4lang-p4c
    for tool in simple_switch_grpc p4c-bm2-ss; do
        if ! command -v "$tool" >/dev/null; then
            echo "vagrant-provision: $tool missing after installing p4lang packages" >&2
            exit 1
        fi
    done
}

install_test_tools() {
    # The Vagrantfile and this script are checked by tests that need ruby/shellcheck.
    apt-get install -y -q --no-install-recommends make ruby shellcheck
}

install_p4lang
install_test_tools
"$repo/scripts/install.sh"
echo "vagrant-provision: done ($(simple_switch_grpc --version 2>&1 | head -n1), $(p4c-bm2-ss --version 2>&1 | head -n1))"
