"""Helper process for crash tests (not a test module).

Usage: python crash_receiver.py URL ADDRESS CREDIT

Attaches a receiver granting exactly CREDIT, waits until CREDIT messages have arrived,
settles none of them, prints READY and then sleeps until it is killed.
"""

from __future__ import annotations

import sys
import time

from proton.utils import BlockingConnection


def main() -> int:
    url, address, credit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = BlockingConnection(url, timeout=20)
    rcv = conn.create_receiver(address, credit=0)
    rcv.link.flow(credit)
    print("ATTACHED", flush=True)
    conn.wait(lambda: rcv.fetcher is not None and rcv.fetcher.has_message >= credit, timeout=20,
              msg=f"{credit} messages")
    print("READY", flush=True)
    time.sleep(120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
