# Sourced by .ci/setup.d scripts (not run on its own).
#
# apt_install_missing PACKAGE...: install those of the Debian packages that are not installed
# yet, retrying apt-get (mirrors and the dpkg lock can be briefly unavailable); returns
# non-zero, after saying which, when they cannot be installed.
apt_install_missing() {
    local sudo="" missing="" package attempt
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo -n"
    fi
    for package in "$@"; do
        # Not `dpkg -s` alone: it succeeds for a removed package whose configuration remains.
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $package"
    done
    if [ -z "$missing" ]; then
        return 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    for attempt in 1 2 3; do
        # shellcheck disable=SC2086  # one word per package
        if $sudo apt-get -o DPkg::Lock::Timeout=120 update -q &&
            $sudo apt-get -o DPkg::Lock::Timeout=120 install -y -q --no-install-recommends $missing; then
            return 0
        fi
        echo "apt-get failed (attempt $attempt); retrying" >&2
        sleep $((attempt * 10))
    done
    echo "cannot install$missing" >&2
    return 1
}

# apt_install_missing_unstarted PACKAGE...: apt_install_missing, with a policy-rc.d that makes
# the packages' maintainer scripts leave their system-wide daemons (rabbitmq-server,
# containerd) stopped and disabled: the tests run private instances of their own.
apt_install_missing_unstarted() {
    local sudo="" policy=/usr/sbin/policy-rc.d made_policy="" status=0
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo -n"
    fi
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod 755 "$policy"
        made_policy=yes
    fi
    apt_install_missing "$@" || status=$?
    if [ -n "$made_policy" ]; then
        $sudo rm -f "$policy"
    fi
    return "$status"
}
