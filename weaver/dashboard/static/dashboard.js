// Weaver dashboard: live regions over server-sent events, and the graph view.
// No inline script anywhere (the Content-Security-Policy forbids it): everything is here.
"use strict";

(function () {
  function notePath(path) {
    return "/notes/" + path.split("/").map(encodeURIComponent).join("/");
  }

  // ---- live regions: elements with `data-live` and an id are re-read from the server ----
  var pending = null;

  function refresh() {
    pending = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (region) {
          var replacement = fresh.getElementById(region.id);
          if (replacement) { region.replaceWith(document.importNode(replacement, true)); }
        });
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      })
      .catch(function () { /* the next event tries again */ });
  }

  function scheduleRefresh() {
    if (pending === null) { pending = window.setTimeout(refresh, 150); }
  }

  function followEvents() {
    if (document.body.dataset.liveEvents !== "on" || !document.querySelector("[data-live]")) {
      return;
    }
    var indicator = document.getElementById("live-indicator");
    var source = new EventSource("/events");
    source.addEventListener("open", function () {
      if (indicator) { indicator.classList.add("on"); }
      // What changed between rendering the page and subscribing would otherwise be missed.
      scheduleRefresh();
    });
    source.addEventListener("error", function () { if (indicator) { indicator.classList.remove("on"); } });
    source.addEventListener("runs", scheduleRefresh);
    source.addEventListener("notes", scheduleRefresh);
  }

  // ---- graph view ----
  function drawGraph() {
    var box = document.getElementById("graph");
    if (!box || typeof window.cytoscape !== "function") { return; }
    var query = new URLSearchParams({
      note: box.dataset.note || "", folder: box.dataset.folder || "", depth: box.dataset.depth || "1"
    });
    var summary = document.getElementById("graph-summary");
    fetch("/graph/data?" + query.toString(), { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (body) {
        if (body.error) { summary.textContent = body.error; return; }
        var nodes = body.elements.filter(function (e) { return !e.data.source; }).length;
        summary.textContent = nodes + " of " + body.totalNodes + " notes" +
          (body.truncated ? " (the best connected shown)" : "") + ". Click a note to open it.";
        var graph = window.cytoscape({
          container: box,
          elements: body.elements,
          layout: { name: nodes > 200 ? "concentric" : "cose", animate: false },
          style: [
            { selector: "node", style: { "label": "data(label)", "font-size": 9, "width": 12, "height": 12,
              "background-color": "#4c6ef5", "color": "#333" } },
            { selector: "node[?start]", style: { "background-color": "#e8590c", "width": 20, "height": 20 } },
            { selector: "edge", style: { "width": 1, "line-color": "#adb5bd", "curve-style": "straight",
              "target-arrow-shape": "triangle", "target-arrow-color": "#adb5bd", "arrow-scale": 0.6 } }
          ]
        });
        graph.on("tap", "node", function (event) { window.location.href = notePath(event.target.id()); });
        document.body.dataset.graphReady = String(nodes);
      })
      .catch(function (error) { summary.textContent = "The graph could not be loaded: " + error; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    followEvents();
    drawGraph();
  });
})();
