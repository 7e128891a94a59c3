"""One self-contained HTML file: plotly.js inlined, no network access needed to open it.

Each chart's figure is embedded as JSON and drawn by one script at the end. When every chart has drawn,
the script sets ``data-srifty-rendered`` on ``<body>`` to the number of charts and
``data-srifty-boxes`` to their page positions (so a headless browser can check the page drew); any
script error is counted in ``data-srifty-errors``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from srifty import __version__
from srifty.report.sections import Section

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1180px; color: #1f2933; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccd; }
.banner { background: #fff4ce; border: 1px solid #e0c36a; padding: 8px 12px; }
.note { color: #52606d; font-style: italic; }
.srifty-plot { width: 100%; min-height: 430px; }
"""

_DRAW = """
(function () {
  var body = document.body;
  var errors = 0;
  window.addEventListener('error', function () {
    errors += 1;
    body.setAttribute('data-srifty-errors', String(errors));
  });
  var divs = Array.prototype.slice.call(document.querySelectorAll('.srifty-plot'));
  var drawn = divs.map(function (div) {
    var fig = JSON.parse(document.getElementById(div.id + '-figure').textContent);
    return Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
  });
  Promise.all(drawn).then(function () {
    var boxes = divs.map(function (div) {
      var r = div.getBoundingClientRect();
      var left = Math.round(r.left + window.scrollX), top = Math.round(r.top + window.scrollY);
      return [left, top, Math.round(r.width), Math.round(r.height)];
    });
    body.setAttribute('data-srifty-boxes', JSON.stringify(boxes));
    body.setAttribute('data-srifty-rendered', String(divs.length));
  }).catch(function (e) { errors += 1; body.setAttribute('data-srifty-errors', String(errors) + ': ' + e); });
})();
"""


def _script_json(text: str) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>`` or ``<!--`` can appear)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(title: str, sections: Sequence[Section], sources: Sequence[str], emulated: bool) -> str:
    """The whole page."""
    from plotly.offline import get_plotlyjs

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        f"<script>{get_plotlyjs()}</script>",
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if emulated:
        parts.append(
            '<p class="banner"><strong>EMULATED cloud.</strong> "True" times and costs here come from srifty\'s '
            "emulated cloud, a seeded statistical model of a cloud, not from real VMs.</p>"
        )
    parts.append(f'<p class="note">srifty {html.escape(__version__)}; from {html.escape(", ".join(sources))}.</p>')
    n = 0
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        parts.extend(f"<p>{p}</p>" for p in section.paragraphs)
        for fig in section.figures:
            parts.append(f'<div class="srifty-plot" id="plot-{n}"></div>')
            parts.append(f'<script type="application/json" id="plot-{n}-figure">{_script_json(fig.to_json())}</script>')
            n += 1
        parts.extend(f'<p class="note">{html.escape(note)}</p>' for note in section.notes)
    parts.append(f"<script>{_DRAW}</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def figure_count(sections: Sequence[Section]) -> int:
    """How many charts the page draws."""
    return sum(len(s.figures) for s in sections)
