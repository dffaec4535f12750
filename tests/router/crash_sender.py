"""Helper process for crash tests (not a test module).

Usage: python crash_sender.py URL ADDRESS COUNT

Sends COUNT pre-settled messages (bodies 0 .. COUNT-1) to ADDRESS, keeps its connection
serviced for a second so they are written, prints READY and then sleeps until it is killed
(its connection then ends without an AMQP close).
"""

from __future__ import annotations

import sys
import time

from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection


def main() -> int:
    url, address, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = BlockingConnection(url, timeout=20)
    snd = conn.create_sender(address, options=AtMostOnce())
    for i in range(count):
        snd.send(Message(body=i))
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        conn.container.process()
        time.sleep(0.01)
    print("READY", flush=True)
    time.sleep(120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
