"""The web dashboard `weaver daemon` serves at `/`: runs, workflows, vault health, search, notes
and the link graph, updated live over server-sent events.

- `app`: the routes (`Dashboard`), rendered with the templates in `templates/`.
- `data`: what each page shows, read through the same core functions as the MCP tools and CLI.
- `security`: loopback Host/Origin checks, the login cookie, CSRF tokens, security headers.
- `live`: the `/events` stream.
- `render`: Jinja2 set-up and markdown without raw HTML.

Every asset is in `static/` (Cytoscape.js vendored from npm, with its license): no CDN, no
build step, works offline.
"""
