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
        dpkg -s "$package" >/dev/null 2>&1 || missing="$missing $package"
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
