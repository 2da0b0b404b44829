"""`bead dashboard`: a read-only page of memory at a glance, served on loopback.

An entry point like the proxy and the MCP servers: the routes translate and
call the application layer (bead.core.overview); the page is rendered on the
server from a Jinja template (autoescaping on: every stored string is text,
never markup) and draws one plot with uPlot, vendored as a static file
(MIT, ``static/uplot.LICENSE``; no build step).

Who may see it is decided by the proxy's own checks (bead.proxy.access),
imported rather than copied: a literal loopback Host only; what another site
starts is refused (an Origin other than the page's own, a cross-site
``Sec-Fetch-Site``), and the page itself only to a navigation the person starts
(``Sec-Fetch-Site: none``: a page of the same origin, another user's served on
the port before, may be left in the browser); and memory only for its owner: on Linux the kernel says
the connecting socket is the home owner's, anywhere the run's secret leads
the path (``http://127.0.0.1:7079/<token>/``) or comes in ``X-Bead-Token``.
Only GET and HEAD are answered; nothing on the page changes memory.
"""
