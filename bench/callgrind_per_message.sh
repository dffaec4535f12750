#!/bin/bash
# Instructions per message of a router process, counted by callgrind (bench/README.md): one
# standalone router from CHECKOUT's router/ sources under valgrind, instrumentation off
# during WARMUP messages through it and on for the next MEASURED; 1->1 with qdm-send and
# qdm-recv (pre-settled or unsettled), or 1->4 (balanced, unsettled). What else runs on the
# machine does not change the count, as it changes timings.
#
# usage: bash bench/callgrind_per_message.sh CHECKOUT presettled|unsettled|balanced WARMUP MEASURED
# env:   PYTHON (default: python3), LOADGEN (default: bench/build, made by bench/loadgen/build.sh),
#        OUT (default: a new temporary directory: the router's log and callgrind's output)
set -euo pipefail
SRC=$(cd "$1" && pwd); MODE=$2; WARM=$3; N=$4
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
LOADGEN=${LOADGEN:-$HERE/build}
OUT=${OUT:-$(mktemp -d)}
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$OUT/router.conf" <<CONF
router {
    mode: standalone
    id: callgrind-router
}
listener {
    host: 127.0.0.1
    port: $PORT
    saslMechanisms: ANONYMOUS
}
address {
    prefix: closest
    distribution: closest
}
address {
    prefix: balanced
    distribution: balanced
}
CONF
case $MODE in
  presettled) ADDRESS=closest/bench; PRESETTLED=-p; RECEIVERS=1;;
  unsettled) ADDRESS=closest/bench; PRESETTLED=; RECEIVERS=1;;
  balanced) ADDRESS=balanced/bench; PRESETTLED=; RECEIVERS=4;;
  *) echo "mode: presettled, unsettled or balanced, not $MODE" >&2; exit 2;;
esac
PYTHONPATH=$SRC/router valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.out" \
  "$PYTHON" -m qdrouter -c "$OUT/router.conf" > "$OUT/router.log" 2>&1 &
ROUTER=$!
trap 'kill $ROUTER 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q "started" "$OUT/router.log" && break; sleep 0.2; done
grep "Data path" "$OUT/router.log" >&2 || true
run() {  # MESSAGES: the receivers, ready, then the sender
  local each=$1 receivers=()
  [ "$MODE" = balanced ] && each=0  # (each takes what comes until idle)
  for r in $(seq 1 "$RECEIVERS"); do
    "$LOADGEN/qdm-recv" -c "127.0.0.1:$PORT" -a "$ADDRESS" -m "$each" -i 5 -t 600 > "$OUT/recv.$r.json" & receivers+=($!)
  done
  sleep 2
  "$LOADGEN/qdm-send" -c "127.0.0.1:$PORT" -a "$ADDRESS" -m "$1" $PRESETTLED -t 600 > "$OUT/send.json"
  for r in "${receivers[@]}"; do wait "$r" || true; done
}
run "$WARM"
callgrind_control -i on $ROUTER > /dev/null
run "$N"
callgrind_control -i off $ROUTER > /dev/null
callgrind_control -d $ROUTER > /dev/null
kill $ROUTER; wait $ROUTER 2>/dev/null || true
IR=$(for f in "$OUT"/callgrind.out*; do grep -h "^summary:\|^totals:" "$f" | awk '{print $2}'; done | sort -n | tail -1)
echo "$MODE: $((IR / N)) instructions per message ($IR instructions, $N messages; $OUT)"
