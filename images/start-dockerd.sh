#!/usr/bin/env bash
# Make sure a Docker daemon answers: start Debian's dockerd in the background if none does.
# Used by images/build.sh and by CI when it only loads cached image archives (the daemon is
# not running after a reboot, and tests/images needs it).
set -euo pipefail
logdir=${1:-${QDMESH_IMAGE_CACHE:-$HOME/.cache/qdmesh-images}}
docker info >/dev/null 2>&1 && exit 0
command -v dockerd >/dev/null || { echo "start-dockerd.sh: docker daemon not running and no dockerd (apt-get install docker.io)" >&2; exit 1; }
mkdir -p "$logdir"
echo "start-dockerd.sh: starting dockerd (log: $logdir/dockerd.log)" >&2
# The daemon is the machine's, shared by every run: it must not carry a test run's marker
# (tests/reaper.py ends what does when that run ends), and it gets a session of its own.
# Nor any other descriptor of its caller: started under `flock /tmp/qdmesh-cluster.lock ...`,
# a daemon that inherited the lock's descriptor would hold the machine's cluster lock for as
# long as it runs, and every later cluster run would wait for it for ever.
(
    for fd in /proc/self/fd/*; do
        fd=${fd##*/}
        [ "$fd" -gt 2 ] || continue
        eval "exec $fd>&-" 2>/dev/null || true  # (the listing's own descriptor is gone already)
    done
    exec env -u QDMESH_TEST_RUN setsid nohup dockerd >"$logdir/dockerd.log" 2>&1 < /dev/null
) &
for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && exit 0; sleep 1; done
echo "start-dockerd.sh: dockerd did not start: see $logdir/dockerd.log" >&2
exit 1
