/* frontdesk web chat in the browser: the chat page (/webchat/{account}) and the widget a business
   pastes into its own site run this same script.

     <script src="https://FRONTDESK_HOST/webchat/widget.js" data-account="ACCOUNT_ID" async></script>

   Optional: data-title="Your business" (the panel's heading). The page adds data-page: it brings
   its own markup instead of a launcher. Plain JS, no build step, no framework; it talks only to the
   host it was loaded from and inserts text with textContent, never as HTML. The server fills in
   SERVER (settings of the deployment: the text limit, the model label). */
(function () {
  "use strict";
  // An async script can name itself only while it first runs: currentScript is null afterwards.
  var script = document.currentScript;
  var SERVER = {/*SERVER*/};
  var MAX = SERVER.maxTextChars || 4000;
  var TOKEN = /^[A-Za-z0-9._:-]{1,128}$/; // the API's pattern for account and message ids
  var SESSION = /^[A-Za-z0-9._:-]{16,128}$/; // and for session ids: long enough not to be guessed
  var ACCOUNT = script && script.getAttribute("data-account");
  if (!ACCOUNT || !TOKEN.test(ACCOUNT)) {
    console.error('frontdesk chat: the <script> tag needs data-account="<web chat account id>"');
    return;
  }
  // The API lives beside this script (…/webchat/widget.js → …/v1/webchat/ACCOUNT), whatever the
  // host page's own address.
  var BASE = new URL("../", script.src);
  var API = new URL("v1/webchat/" + encodeURIComponent(ACCOUNT), BASE).href;

  function randomToken(bytes) {
    var b = new Uint8Array(bytes), s = "";
    crypto.getRandomValues(b);
    for (var i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""); // base64url
  }

  // The session id is the only key to the transcript: 128 random bits, kept per account in this
  // site's localStorage so a reload continues the conversation; in memory where storage is blocked.
  function sessionId() {
    var key = "frontdesk.session." + ACCOUNT, id = null;
    try { id = localStorage.getItem(key); } catch (e) { /* blocked: a new id, below */ }
    if (id && SESSION.test(id)) return id;
    id = randomToken(16);
    try { localStorage.setItem(key, id); } catch (e) { /* blocked: it lasts as long as the page */ }
    return id;
  }

  var sent = 0;
  function messageId() { sent += 1; return sent.toString(36) + "-" + randomToken(9); }

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  // fetch and read the JSON answer. A failure is an Error with .status: the HTTP status and the
  // server's own message, or 0 when no answer could be read (offline; or from another site, an
  // origin the account does not allow: the browser then hides the answer).
  function request(url, init) {
    return fetch(url, init).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) {
        if (res.ok) return data || {};
        var err = new Error((data && data.error && data.error.message) || "The request failed (HTTP " + res.status + ").");
        err.status = res.status;
        throw err;
      });
    }, function () {
      var err = new Error("no answer");
      err.status = 0;
      throw err;
    });
  }

  // The chat on the elements of `ui` (the page's own markup, or the widget's in its shadow root).
  // `unreachable`: what to say when no answer can be read at all (null: the page's own words).
  function startChat(ui, unreachable) {
    var session = sessionId(), Q = "?session=" + encodeURIComponent(session);
    var seen = new Set(); // "messageId:index" of rendered blocks
    var typingTimer = null, sending = false, lastFailed = null, es = null;
    var retryTimer = null, retryDelay = 5000, loadFailed = false;

    ui.input.maxLength = MAX;
    function showError(msg) { ui.error.textContent = msg || ""; }
    function noAnswer(fallback) {
      if (navigator.onLine === false) return "You're offline — check your connection and try again.";
      return unreachable || fallback;
    }
    function nearBottom() { return ui.scroller.scrollHeight - ui.scroller.scrollTop - ui.scroller.clientHeight < 120; }
    function scrollDown() { ui.scroller.scrollTop = ui.scroller.scrollHeight; }
    function fmtTime(iso) {
      var d = iso ? new Date(iso) : new Date();
      return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    }
    function setTyping(on) {
      clearTimeout(typingTimer);
      ui.typing.hidden = !on;
      if (on) { typingTimer = setTimeout(function () { ui.typing.hidden = true; }, 60000); if (nearBottom()) scrollDown(); }
    }
    // Relative URLs are frontdesk's, not the host page's; links only to http(s).
    function resolve(u) {
      try { var url = new URL(u, BASE); return url.protocol === "http:" || url.protocol === "https:" ? url.href : null; } catch (e) { return null; }
    }

    function renderBlock(block) {
      if (block && block.type === "image_group") {
        var fig = document.createElement("figure"), imgs = document.createElement("div");
        imgs.className = "imgs";
        (block.urls || []).forEach(function (u) {
          var img = document.createElement("img"), href = resolve(u);
          img.loading = "lazy"; img.alt = block.caption || "image"; img.src = href || u;
          if (href) { var a = document.createElement("a"); a.href = href; a.target = "_blank"; a.rel = "noopener noreferrer"; a.appendChild(img); imgs.appendChild(a); }
          else imgs.appendChild(img);
        });
        fig.appendChild(imgs);
        if (block.caption) { var cap = document.createElement("figcaption"); cap.textContent = block.caption; fig.appendChild(cap); }
        return fig;
      }
      var p = document.createElement("div");
      p.className = "text";
      p.textContent = block && typeof block.text === "string" ? block.text : "[unsupported content]";
      return p;
    }

    // Create a message element and insert it ordered by message id (pending ones stay last).
    function createMsg(role, mid, createdAt) {
      var el = document.createElement("div");
      el.className = "msg msg-" + (role === "user" ? "user" : "assistant");
      var bubble = document.createElement("div"); bubble.className = "bubble";
      var meta = document.createElement("div"); meta.className = "meta"; meta.textContent = fmtTime(createdAt);
      el.appendChild(bubble); el.appendChild(meta);
      if (mid != null) el.dataset.messageId = String(mid);
      var stick = nearBottom(), before = null;
      if (mid != null) {
        for (var c = ui.list.firstElementChild; c; c = c.nextElementSibling) {
          var cid = c.dataset.messageId;
          if (cid === undefined || Number(cid) > Number(mid)) { before = c; break; }
        }
      }
      ui.list.insertBefore(el, before);
      if (stick || role === "user") scrollDown();
      return el;
    }
    function findMsg(mid) { return ui.list.querySelector('.msg[data-message-id="' + String(mid).replace(/"/g, "") + '"]'); }

    // Add one block of a message (dedup by message id + index; blocks kept in index order).
    function addBlock(mid, index, role, block, createdAt) {
      var key = mid + ":" + index;
      if (seen.has(key)) return false;
      seen.add(key);
      var el = findMsg(mid) || createMsg(role, mid, createdAt);
      var bubble = el.querySelector(".bubble"), node = renderBlock(block), stick = nearBottom();
      node.dataset.index = String(index);
      var before = null;
      for (var c = bubble.firstElementChild; c; c = c.nextElementSibling) {
        if (Number(c.dataset.index) > index) { before = c; break; }
      }
      bubble.insertBefore(node, before);
      if (stick) scrollDown();
      return true;
    }

    function renderTranscriptMessage(m) {
      (m.blocks || []).forEach(function (b, i) { addBlock(m.id, i, m.role, b, m.created_at); });
      var el = findMsg(m.id);
      if (el && m.receipt && m.receipt.status) el.dataset.receipt = m.receipt.status;
    }

    // Try again later, less often each time (up to a minute): an outage, or a site the account
    // does not allow yet, should not cost a request every few seconds per open page.
    function retryLater() {
      if (es) { es.close(); es = null; }
      if (retryTimer) return;
      retryTimer = setTimeout(function () { retryTimer = null; start(); }, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 60000);
    }

    function loadTranscript() {
      return request(API + "/messages" + Q, { headers: { Accept: "application/json" } }).then(function (data) {
        (data.messages || []).forEach(renderTranscriptMessage);
        scrollDown();
        retryDelay = 5000;
        if (loadFailed) { loadFailed = false; showError(""); }
      }, function (err) {
        loadFailed = true;
        showError(err.status ? "Couldn't load the conversation history." : noAnswer("Couldn't load the conversation history."));
        retryLater();
      });
    }

    // The stream, then the transcript once the stream is open: the server fixes where a stream
    // starts before it answers, so a reply stored meanwhile comes through one or the other
    // (duplicates are dropped), never neither.
    function start() {
      if (!window.EventSource) return loadTranscript();
      var source = new EventSource(API + "/stream" + Q), loaded = false;
      function loadOnce() { if (!loaded) { loaded = true; loadTranscript(); } }
      es = source;
      source.onopen = loadOnce; // only the first time: a reconnection resumes (Last-Event-ID)
      source.addEventListener("block", function (ev) {
        var d; try { d = JSON.parse(ev.data); } catch (e) { return; }
        if (addBlock(d.message_id, d.index, d.role || "assistant", d.block, d.created_at) && d.role !== "user") setTyping(false);
      });
      source.onerror = function () {
        if (es !== source) return;
        loadOnce(); // no stream: the history still, or the reason nothing can be read
        // EventSource reconnects by itself, resuming with Last-Event-ID, unless the server refused
        // the stream outright.
        if (source.readyState === EventSource.CLOSED) retryLater();
      };
    }

    async function postMessage(body) {
      for (var attempt = 0; ; attempt++) {
        try {
          return await request(API + "/messages", {
            method: "POST",
            headers: { "Content-Type": "application/json", Accept: "application/json" },
            body: JSON.stringify(body)
          });
        } catch (err) {
          if ((err.status === 0 || err.status >= 500) && attempt < 3) { await sleep(600 * Math.pow(2, attempt)); continue; }
          throw err;
        }
      }
    }

    function updateCounter() {
      var n = ui.input.value.length;
      ui.counter.textContent = n >= MAX * 0.8 ? n + " / " + MAX : "";
      ui.counter.classList.toggle("over", n >= MAX);
      ui.send.disabled = sending || !ui.input.value.trim();
      ui.input.style.height = "auto";
      ui.input.style.height = Math.min(ui.input.scrollHeight + 2, 160) + "px";
    }

    async function send() {
      var text = ui.input.value;
      if (sending || !text.trim()) return;
      if (text.length > MAX) { showError("Message is too long (max " + MAX + " characters)."); return; }
      // Reuse the id when retrying the exact same text so a resend stays idempotent.
      var id = lastFailed && lastFailed.text === text ? lastFailed.id : messageId();
      sending = true; showError("");
      var el = createMsg("user", null, null);
      el.classList.add("pending");
      el.querySelector(".bubble").appendChild(renderBlock({ type: "text", text: text }));
      el.querySelector(".meta").textContent = "Sending…";
      ui.input.value = ""; updateCounter(); ui.input.focus();
      try {
        var data = await postMessage({ session: session, id: id, text: text });
        lastFailed = null;
        el.classList.remove("pending");
        el.querySelector(".meta").textContent = fmtTime();
        if (data.message_id != null) {
          var existing = findMsg(data.message_id);
          if (existing && existing !== el) el.remove();
          else { el.dataset.messageId = String(data.message_id); seen.add(data.message_id + ":0"); }
        }
        setTyping(true);
      } catch (err) {
        lastFailed = { id: id, text: text };
        el.remove();
        if (!ui.input.value) ui.input.value = text;
        showError(err.status ? err.message : noAnswer("Network error — check your connection and try again."));
      } finally {
        sending = false; updateCounter(); ui.input.focus();
      }
    }

    ui.form.addEventListener("submit", function (e) { e.preventDefault(); send(); });
    ui.input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    ui.input.addEventListener("input", function () { if (ui.error.textContent && !loadFailed) showError(""); updateCounter(); });

    updateCounter();
    start();
    return { focus: function () { ui.input.focus(); } };
  }

  function elements(root) {
    function $(id) { return root.getElementById(id); }
    return {
      list: $("messages"), scroller: $("scroller"), form: $("composer"), input: $("text"), send: $("send"),
      error: $("error"), typing: $("typing"), counter: $("counter")
    };
  }

  // The widget's look. In a shadow root, so the host page's rules cannot reach in and these cannot
  // leak out; `all: initial !important` on the host also stops the page's inherited and !important
  // styles at the door (inside a shadow tree, an !important :host rule beats the page's).
  var CSS = [
    ":host { all: initial !important; }",
    ".fd { --bg:#f4f5f7; --panel:#fff; --text:#1d2330; --muted:#6b7280; --line:#e3e6eb; --accent:#2f6fed; --accent-text:#fff;",
    "      --bot:#eef0f4; --err:#c62828; --warn-bg:#fff7e0; --warn:#7a5a00;",
    "      position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; color: var(--text); text-align: left;",
    "      font: 15px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }",
    "@media (prefers-color-scheme: dark) { .fd { --bg:#111318; --panel:#1a1d24; --text:#e7e9ee; --muted:#9aa1ad; --line:#2a2f3a;",
    "      --bot:#252a34; --err:#ff6b6b; --warn-bg:#2b2614; --warn:#e8c96a; } }",
    ".fd * { box-sizing: border-box; }",
    "[hidden] { display: none !important; }",
    ".launcher { display: grid; place-items: center; width: 56px; height: 56px; margin: 0; padding: 0; border: 0; border-radius: 50%;",
    "      background: var(--accent); color: var(--accent-text); cursor: pointer; box-shadow: 0 4px 16px rgba(0,0,0,.25); }",
    ".launcher svg { width: 26px; height: 26px; fill: currentColor; }",
    ".panel { position: absolute; right: 0; bottom: 72px; display: flex; flex-direction: column; width: min(380px, calc(100vw - 32px));",
    "      height: min(600px, calc(100vh - 120px)); background: var(--panel); border: 1px solid var(--line); border-radius: 14px;",
    "      overflow: hidden; box-shadow: 0 12px 40px rgba(0,0,0,.2); }",
    "header { display: flex; align-items: center; gap: 8px; padding: 12px 14px; border-bottom: 1px solid var(--line); }",
    "h2 { flex: 1; margin: 0; font-size: 16px; font-weight: 600; }",
    "#close { border: 0; background: none; color: var(--muted); font: 22px/1 system-ui, sans-serif; padding: 2px 6px; cursor: pointer; }",
    "#model-label { margin: 0; padding: 5px 14px; font-size: 12px; background: var(--warn-bg); color: var(--warn); border-bottom: 1px solid var(--line); }",
    ".scroller { flex: 1; overflow-y: auto; padding: 14px; }",
    "#messages { display: flex; flex-direction: column; gap: 10px; }",
    ".msg { display: flex; flex-direction: column; max-width: 85%; }",
    ".msg-user { align-self: flex-end; align-items: flex-end; }",
    ".msg-assistant { align-self: flex-start; align-items: flex-start; }",
    ".bubble { display: flex; flex-direction: column; gap: 8px; padding: 9px 13px; border-radius: 16px; white-space: pre-wrap; overflow-wrap: anywhere; }",
    ".msg-user .bubble { background: var(--accent); color: var(--accent-text); border-bottom-right-radius: 4px; }",
    ".msg-assistant .bubble { background: var(--bot); border-bottom-left-radius: 4px; }",
    ".msg.pending .bubble { opacity: .6; }",
    ".meta { font-size: 11px; color: var(--muted); margin: 2px 6px 0; }",
    "figure { margin: 0; }",
    "figure .imgs { display: flex; flex-wrap: wrap; gap: 6px; }",
    "figure img { display: block; max-width: 100%; max-height: 220px; border-radius: 10px; background: var(--line); }",
    "figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }",
    "#typing { color: var(--muted); font-size: 13px; font-style: italic; padding: 8px 2px 0; }",
    "form { margin: 0; border-top: 1px solid var(--line); padding: 10px 12px; }",
    ".row { display: flex; gap: 8px; align-items: flex-end; }",
    "#text { flex: 1; resize: none; min-height: 42px; max-height: 160px; margin: 0; padding: 10px 12px; border: 1px solid var(--line);",
    "      border-radius: 12px; font: inherit; color: inherit; background: var(--bg); }",
    "#text:focus { outline: 2px solid var(--accent); outline-offset: -1px; }",
    "#send { height: 42px; margin: 0; padding: 0 16px; border: 0; border-radius: 12px; background: var(--accent); color: var(--accent-text);",
    "      font: inherit; font-weight: 600; cursor: pointer; }",
    "#send:disabled { opacity: .5; cursor: default; }",
    ".status { display: flex; justify-content: space-between; gap: 8px; font-size: 12px; min-height: 16px; margin-top: 4px; }",
    "#error { color: var(--err); }",
    "#counter { color: var(--muted); margin-left: auto; }",
    "#counter.over { color: var(--err); }",
    ".sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }",
    "@media (max-width: 480px) { .fd { right: 12px; bottom: 12px; }",
    "      .panel { position: fixed; inset: 0; width: auto; height: auto; border: 0; border-radius: 0; } }"
  ].join("\n");

  // Static markup only: every text that comes from data is set with textContent afterwards.
  var MARKUP =
    '<button id="launcher" class="launcher" type="button" aria-expanded="false" aria-controls="panel" aria-label="Open the chat">' +
    '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z"/></svg></button>' +
    '<section id="panel" class="panel" role="dialog" aria-labelledby="title" hidden>' +
    '<header><h2 id="title"></h2><button id="close" type="button" aria-label="Close the chat">×</button></header>' +
    '<p id="model-label" role="note"></p>' +
    '<div id="scroller" class="scroller"><div id="messages" role="log" aria-live="polite" aria-label="Conversation"></div>' +
    '<div id="typing" hidden aria-live="polite"></div></div>' +
    '<form id="composer" autocomplete="off"><div class="row"><label for="text" class="sr-only">Message</label>' +
    '<textarea id="text" name="text" rows="1" placeholder="Type a message…" aria-describedby="error counter"></textarea>' +
    '<button id="send" type="submit">Send</button></div>' +
    '<div class="status"><span id="error" role="alert"></span><span id="counter" aria-live="polite"></span></div></form>' +
    "</section>";

  function mountWidget() {
    if (document.querySelector("[data-frontdesk-chat]")) return; // the snippet pasted twice: one chat
    var host = document.createElement("div");
    host.setAttribute("data-frontdesk-chat", ACCOUNT);
    var root = host.attachShadow({ mode: "open" });
    var style = document.createElement("style"), shell = document.createElement("div");
    style.textContent = CSS;
    shell.className = "fd";
    shell.innerHTML = MARKUP;
    root.appendChild(style);
    root.appendChild(shell);
    var title = script.getAttribute("data-title") || "Chat";
    root.getElementById("title").textContent = title;
    root.getElementById("typing").textContent = title + " is typing…";
    root.getElementById("model-label").textContent = SERVER.modelLabel || "";
    root.getElementById("model-label").hidden = !SERVER.modelLabel;
    document.body.appendChild(host);

    var launcher = root.getElementById("launcher"), panel = root.getElementById("panel"), chat = null;
    // From another site, an answer we may not read most likely means the account does not allow
    // this one: say so, for the site's owner, rather than fail silently.
    var unreachable = "This chat can't connect from " + location.origin + ". If this is your site, add " +
      location.origin + " to the web chat account's allowed_origins.";
    function setOpen(open) {
      panel.hidden = !open;
      launcher.setAttribute("aria-expanded", String(open));
      launcher.setAttribute("aria-label", open ? "Close the chat" : "Open the chat");
      if (!open) { launcher.focus(); return; }
      chat = chat || startChat(elements(root), BASE.origin === location.origin ? null : unreachable);
      chat.focus();
    }
    launcher.addEventListener("click", function () { setOpen(panel.hidden); });
    root.getElementById("close").addEventListener("click", function () { setOpen(false); });
    panel.addEventListener("keydown", function (e) { if (e.key === "Escape") setOpen(false); });
  }

  if (script.hasAttribute("data-page")) {
    startChat(elements(document), null).focus();
  } else if (document.body) {
    mountWidget();
  } else {
    document.addEventListener("DOMContentLoaded", mountWidget);
  }
})();
