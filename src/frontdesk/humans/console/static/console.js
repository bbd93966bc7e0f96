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
  // Attention: a browser notification and an optional beep when more threads need attention
  // (a hand-off, a failed delivery). Both off until the operator turns them on in this browser;
  // the permission is asked once, on that click.
  var ALERTS = { notify: "frontdesk.notify", sound: "frontdesk.sound" };
  var lastAttention = null;
  function wanted(kind) { return window.localStorage && localStorage.getItem(ALERTS[kind]) === "on"; }
  function beep() {
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    var context = new Context(), tone = context.createOscillator(), gain = context.createGain();
    tone.frequency.value = 880;
    gain.gain.value = 0.08;
    tone.connect(gain);
    gain.connect(context.destination);
    tone.start();
    tone.stop(context.currentTime + 0.18);
  }
  function alertIfMore() {
    var counter = document.getElementById("attention-count"), box = document.getElementById("alerts");
    if (!counter) return;
    var n = parseInt(counter.dataset.count || "0", 10);
    if (lastAttention !== null && n > lastAttention && box) {
      if (wanted("notify") && window.Notification && Notification.permission === "granted") {
        new Notification(box.dataset.title.replace("{n}", n), { body: box.dataset.body, tag: "frontdesk-attention" });
      }
      if (wanted("sound")) beep();
    }
    lastAttention = n;
  }
  function alertControls() {
    var box = document.getElementById("alerts");
    if (!box) return;
    Object.keys(ALERTS).forEach(function (kind) {
      var input = box.querySelector("input[name=" + kind + "]");
      if (!input) return;
      input.checked = wanted(kind);
      input.addEventListener("change", function () {
        localStorage.setItem(ALERTS[kind], input.checked ? "on" : "off");
        if (kind === "notify" && input.checked && window.Notification && Notification.permission === "default") {
          Notification.requestPermission();
        }
        if (kind === "sound" && input.checked) beep(); // what it will sound like, and the click unlocks audio
      });
    });
  }
  // Keyboard: j / k move through the threads, / searches, r replies (not while typing).
  function keys(event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var typing = target && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName) ||
      (target.tagName === "INPUT" && !/^(checkbox|radio|button|submit)$/.test(target.type)));
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    var links = Array.prototype.slice.call(document.querySelectorAll("#rows li.row > a"));
    if (event.key === "j" || event.key === "k") {
      if (!links.length) return;
      var at = links.indexOf(document.activeElement);
      if (at < 0) at = links.findIndex(function (a) { return a.getAttribute("aria-current") === "page"; });
      var next = at < 0 ? 0 : Math.max(0, Math.min(links.length - 1, at + (event.key === "j" ? 1 : -1)));
      links[next].focus();
      event.preventDefault();
    } else if (event.key === "/" || event.key === "r") {
      var field = document.getElementById(event.key === "/" ? "search" : "reply-text");
      if (field) { field.focus(); event.preventDefault(); }
    }
  }
  function start() {
    follow(document.getElementById("messages"), "#messages");
    follow(document.getElementById("inbox"), "#rows", function () { retitle(); alertIfMore(); });
    alertControls();
    alertIfMore();
    document.addEventListener("keydown", keys);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
