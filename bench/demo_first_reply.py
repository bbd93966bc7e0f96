"""The demo's first reply as a newcomer gets it: seconds from the chat page opening to the reply.

Each round starts ``frontdesk demo`` afresh (its own database and media in a temporary directory,
the embedded model's weights already verified: the warm cache), opens the web chat page as soon
as the demo prints its address, sends one message through the web chat API and waits for the
reply. Prints each round and the median; nothing leaves this machine.

Run (with the ``local`` extra installed and the weights verified once, e.g. by ``frontdesk demo``):
    .venv/bin/python bench/demo_first_reply.py
    .venv/bin/python bench/demo_first_reply.py --rounds 5 --text "Are you open on Saturday?"
    .venv/bin/python bench/demo_first_reply.py --frontdesk /tmp/base/.venv/bin/frontdesk   # another checkout
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ADDRESS = re.compile(r"Chat with the demo business: (\S+)/webchat/(\S+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_round(frontdesk: str, text: str, timeout_s: float) -> tuple[float, float, str]:
    """(seconds from start to the page, seconds from the page to the reply, the reply's text)."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = {
            **os.environ,
            "FRONTDESK_DEMO_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/demo.db",
            "FRONTDESK_MEDIA_DIR": f"{tmp}/media",
            "FRONTDESK_PORT": str(port),
            "FRONTDESK_HOST": "127.0.0.1",
        }
        started = time.monotonic()
        process = subprocess.Popen(
            [frontdesk, "demo"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                found = ADDRESS.search(line)
                if found:
                    base, account = found.groups()
                    break
            else:
                raise RuntimeError("the demo stopped before printing its address")
            with httpx.Client(base_url=base, timeout=timeout_s) as http:
                page = time.monotonic()
                while True:  # the address is printed just before the server listens
                    try:
                        http.get(f"/webchat/{account}").raise_for_status()
                        break
                    except httpx.TransportError:
                        if time.monotonic() - page > timeout_s:
                            raise
                        time.sleep(0.05)
                opened = time.monotonic()
                session = secrets.token_hex(12)
                sent = http.post(f"/v1/webchat/{account}/messages", json={"session": session, "id": "m1", "text": text})
                sent.raise_for_status()
                while time.monotonic() - opened < timeout_s:
                    messages = http.get(f"/v1/webchat/{account}/messages", params={"session": session}).json()
                    replies = [m for m in messages["messages"] if m.get("role") == "assistant"]
                    if replies:
                        shown = " ".join(b.get("text", "") for b in replies[0].get("blocks", []))
                        return opened - started, time.monotonic() - opened, shown
                    time.sleep(0.1)
                raise TimeoutError(f"no reply within {timeout_s:.0f} s")
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--text", default="Hi! How much are 500 business cards?")
    parser.add_argument(
        "--frontdesk",
        default=str(Path(sys.executable).with_name("frontdesk")),
        help="the frontdesk command to start (default: this environment's)",
    )
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    waits: list[float] = []
    for number in range(1, args.rounds + 1):
        start_s, wait_s, reply = one_round(args.frontdesk, args.text, args.timeout)
        waits.append(wait_s)
        print(
            f"round {number}: page after {start_s:.1f} s, first reply {wait_s:.1f} s after the page: {reply[:100]}",
            flush=True,
        )
    print(
        f"first reply after the page opened: median {statistics.median(waits):.1f} s over {len(waits)} rounds "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
