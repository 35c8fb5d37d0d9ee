"""The HTML report's inline style sheet and script, and the content policy that allows only them.

The body, not the window, is what scrolls (full width, the column centred by its padding): headless
Chromium paints a window scrolled to an anchor blank in its screenshots, and a page opened at
`#trial-…` is one a reader shares. Printing lets the page flow again.
"""

from __future__ import annotations

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
STYLE = """
html{height:100%;overflow:hidden}
body{font-family:system-ui,sans-serif;color:#212529;height:100%;overflow:auto;margin:0;box-sizing:border-box;
padding:0 max(16px,calc((100% - 1200px)/2)) 48px}
@media print{html,body{height:auto;overflow:visible}}
h1{font-size:1.5em}h2{border-bottom:1px solid #dee2e6;padding-bottom:4px;margin-top:32px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}dl.meta dt{font-weight:600}
dl.meta dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #dee2e6;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.grid td.cell{padding:0;text-align:center;width:34px}
table.grid td.cell a{display:block;padding:3px 0;color:#fff;text-decoration:none;font-weight:700}
td.pass{background:#2f9e44}td.fail{background:#e03131}td.excluded{background:#f08c00}
.trajectory details{border:1px solid #dee2e6;border-radius:4px;margin:6px 0;padding:4px 10px}
.trajectory summary{cursor:pointer}.mark-pass{color:#2f9e44}.mark-fail{color:#e03131}
.msg{margin:6px 0;padding:6px 10px;border-left:4px solid #adb5bd;background:#f8f9fa;white-space:pre-wrap}
.msg .role{font-weight:700;display:block}.role-assistant{border-color:#1c7ed6}.role-user{border-color:#2f9e44}
.role-tool{border-color:#f08c00;font-family:ui-monospace,monospace;font-size:.9em}
.role-system{border-color:#ae3ec9}.msg.error{border-color:#e03131;background:#fff5f5}
.badge{background:#e03131;color:#fff;padding:0 4px;border-radius:3px}
.toolcall{font-family:ui-monospace,monospace;font-size:.9em}.notes{color:#862e9c}
.src-live{color:#d9480f}.src-replay{color:#1c7ed6}.src-shared{color:#ae3ec9}
[hidden]{display:none !important}
#controls{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #dee2e6;z-index:1}
#controls input[type=search]{width:24em;margin-left:16px}#match-count{margin-left:12px;color:#495057}
pre.result{margin:2px 0;white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.9em}
details.result{margin:2px 0}details.result>summary{color:#495057;cursor:pointer}
"""
# Filters and search, and opening the trajectory an anchor names (an anchor into a closed <details>
# would land on a one-line summary). State comes from the URL too, so a link can carry it:
# `report.html?only=failures&q=refund#trial-create_task-2`. Without script every trajectory stays
# listed and the controls stay hidden. Defensive on purpose: the Chromium test asserts the page logs
# no errors.
SCRIPT = """
(function () {
  var params = new URLSearchParams(window.location.search);
  var controls = document.getElementById("controls");
  var failuresBox = document.getElementById("only-failures");
  var searchBox = document.getElementById("search");
  var count = document.getElementById("match-count");
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.trajectory"));
  var gridRows = Array.prototype.slice.call(document.querySelectorAll("tr[data-outcome]"));
  var pinned = null;  // the trajectory an anchor opened stays shown whatever the filter
  function failing(element) { return element.getAttribute("data-outcome") !== "pass"; }
  function apply() {
    var onlyFailures = failuresBox.checked;
    var query = searchBox.value.trim().toLowerCase();
    var shown = 0;
    sections.forEach(function (section) {
      var keep = section === pinned || ((!onlyFailures || failing(section)) &&
        (!query || section.textContent.toLowerCase().indexOf(query) !== -1));
      section.hidden = !keep;
      if (keep) { shown += 1; }
    });
    gridRows.forEach(function (row) { row.hidden = onlyFailures && !failing(row); });
    count.textContent = (onlyFailures || query) ? shown + " of " + sections.length + " trajectories shown" : "";
  }
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target || !target.classList.contains("trajectory")) { return; }
    pinned = target;
    apply();
    var details = target.querySelector("details.trial");
    if (details) { details.open = true; }
    target.scrollIntoView();
  }
  failuresBox.checked = params.get("only") === "failures";
  searchBox.value = params.get("q") || "";
  controls.hidden = false;
  failuresBox.addEventListener("change", apply);
  searchBox.addEventListener("input", apply);
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[href^='#']") : null;
    // A link to the hash already in the URL fires no hashchange: open its trajectory all the same.
    if (link && link.getAttribute("href") === window.location.hash) { openTarget(); }
  });
  window.addEventListener("hashchange", openTarget);
  apply();
  openTarget();
})();
"""
