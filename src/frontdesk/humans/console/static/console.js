// The console's only script (no build step): live updates over SSE, drawn with htmx. A "changed"
// event re-fetches a partial (the open thread's messages, or the inbox list with its counts); the
// server is the source of truth.
(function () {
  "use strict";
  function follow(box, target, after) {
    if (!box || !box.dataset.stream || !window.EventSource) return;
    var source = new EventSource(box.dataset.stream);
    source.addEventListener("changed", function () {
      if (!window.htmx) return;
      window.htmx.ajax("GET", box.dataset.partial, { target: target, swap: "innerHTML" }).then(after);
    });
    source.addEventListener("signed_out", function () {
      source.close();
      window.location.assign("/console/login");
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }
  // The tab's title starts with how many threads need attention: "(2) Conversations".
  function retitle() {
    var counter = document.getElementById("attention-count");
    if (!counter) return;
    var n = parseInt(counter.dataset.count || "0", 10);
    var bare = document.title.replace(/^\(\d+\) /, "");
    document.title = n > 0 ? "(" + n + ") " + bare : bare;
  }
  function start() {
    follow(document.getElementById("messages"), "#messages");
    follow(document.getElementById("inbox"), "#rows", retitle);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
