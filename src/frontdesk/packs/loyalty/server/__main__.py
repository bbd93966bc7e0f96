"""``python -m frontdesk.packs.loyalty.server --db PATH [--transport stdio|http] [--host H] [--port N]``."""

from __future__ import annotations

import argparse

from frontdesk.packs.loyalty.server.app import main


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m frontdesk.packs.loyalty.server", description=__doc__)
    parser.add_argument("--db", required=True, help="SQLite file; created and seeded with demo data if new")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="stdio (default) or http")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); endpoint /mcp")
    args = parser.parse_args(argv)
    main(args.transport, args.db, host=args.host, port=args.port)


if __name__ == "__main__":
    cli()
