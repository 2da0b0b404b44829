"""bead: a local memory service for coding agents.

The Markdown files under the bead home are the source of truth; everything
else (the SQLite index, the proxy's state) is derived from them.
"""

__version__ = "0.1.0.dev0"
