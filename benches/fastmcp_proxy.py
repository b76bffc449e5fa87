"""FastMCP's proxy in front of one MCP server, for the gateway comparison.

    python benches/fastmcp_proxy.py --upstream http://127.0.0.1:8931/mcp --port 8932

Serves, over Streamable HTTP at http://127.0.0.1:PORT/mcp, a proxy of the upstream server made
with FastMCP's own `create_proxy` and its defaults (the version pinned in
benches/requirements-fastmcp.txt), as FastMCP's documentation shows it. Runs until killed.
"""

import argparse

from fastmcp.server import create_proxy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the upstream's Streamable HTTP URL")
    parser.add_argument("--port", type=int, required=True, help="the loopback port to serve on")
    args = parser.parse_args()
    proxy = create_proxy(args.upstream, name="fastmcp-proxy")
    proxy.run(
        transport="http",
        host="127.0.0.1",
        port=args.port,
        path="/mcp",
        log_level="warning",
        show_banner=False,
    )


if __name__ == "__main__":
    main()
