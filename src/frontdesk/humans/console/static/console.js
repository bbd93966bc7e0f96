// The console's only script (no build step): live thread updates over SSE, drawn with htmx.
// A "changed" event re-fetches the thread's messages partial; the server is the source of truth.
(function () {
  "use strict";
  function watch() {
    var box = document.getElementById("messages");
    if (!box || !box.dataset.stream || !window.EventSource) return;
    var source = new EventSource(box.dataset.stream);
    source.addEventListener("changed", function () {
      if (window.htmx) {
        window.htmx.ajax("GET", box.dataset.partial, { target: "#messages", swap: "innerHTML" });
      }
    });
    source.addEventListener("signed_out", function () {
      source.close();
      window.location.assign("/console/login");
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", watch);
  } else {
    watch();
  }
})();
