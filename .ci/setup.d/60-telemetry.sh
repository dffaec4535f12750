#!/usr/bin/env bash
# Telemetry pipeline (tests/telemetry): Spark needs a Java 17+ runtime (pyspark comes from the
# telemetry extra), and the HTML report test opens the report in Debian's headless Chromium.
# Idempotent: only checks when both are there.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo -n"
fi

java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1
}

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    local status=0
    for attempt in 1 2 3; do
        if $SUDO apt-get -o DPkg::Lock::Timeout=120 update -q &&
            $SUDO apt-get -o DPkg::Lock::Timeout=120 install -y -q --no-install-recommends "$@"; then
            return 0
        else
            status=$?
        fi
        echo "setup telemetry: apt-get failed (attempt $attempt), retrying" >&2
        sleep $((attempt * 5))
    done
    echo "setup telemetry: could not install $*" >&2
    return "$status"
}

wanted=""
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
    wanted="$wanted openjdk-17-jre-headless"
fi
if ! command -v chromium >/dev/null; then
    wanted="$wanted chromium fonts-dejavu-core"
fi
if [ -n "$wanted" ]; then
    # shellcheck disable=SC2086  # one word per package
    apt_install $wanted
fi

major=$(java_major)
if [ -z "$major" ] || [ "$major" -lt 17 ]; then
    echo "setup telemetry: Spark needs Java 17 or later, found: $(java -version 2>&1 | head -1)" >&2
    exit 1
fi
command -v chromium >/dev/null || { echo "setup telemetry: chromium missing" >&2; exit 1; }
python3 -c 'import pyspark' || { echo "setup telemetry: pyspark missing (the telemetry extra)" >&2; exit 1; }
echo "setup telemetry: java $major, $(chromium --version 2>/dev/null | head -1)," \
    "pyspark $(python3 -c 'import pyspark; print(pyspark.__version__)')"
