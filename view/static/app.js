// llmproxy web view: the pages are complete without this script; it adds
// filtering as you type and the live log. It never turns recorded content
// into markup: it only moves elements the server rendered (and escaped).
"use strict";

(function () {
  const view = { ready: true, liveEntries: 0, filtered: 0 };
  window.llmproxyView = view;

  // parse reads server-rendered HTML into an inert document.
  function parse(html) {
    return new DOMParser().parseFromString(html, "text/html");
  }

  function setupFilter() {
    const input = document.getElementById("filter");
    const results = document.getElementById("results");
    if (!input || !results) return;
    const form = input.form;
    let timer = 0;
    let seq = 0;
    let inflight = null;
    async function refresh() {
      const url = new URL(form.action, location.href);
      for (const [k, v] of new FormData(form)) {
        if (v !== "") url.searchParams.set(k, v);
      }
      const mine = ++seq;
      if (inflight) inflight.abort();
      inflight = new AbortController();
      try {
        const resp = await fetch(url, { signal: inflight.signal, credentials: "same-origin" });
        if (!resp.ok || mine !== seq) return;
        const doc = parse(await resp.text());
        const fresh = doc.getElementById("results");
        if (!fresh || mine !== seq) return;
        const current = document.getElementById("results");
        current.replaceWith(document.adoptNode(fresh));
        history.replaceState(null, "", url.pathname + url.search);
        view.filtered++;
      } catch (e) {
        if (e.name !== "AbortError") throw e;
      }
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    });
    input.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && input.value !== "") {
        input.value = "";
        clearTimeout(timer);
        refresh();
      }
    });
    document.addEventListener("keydown", function (e) {
      const t = e.target;
      const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || (t && t.isContentEditable);
      if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        input.focus();
        input.select();
      }
    });
  }

  function setupLive() {
    const table = document.getElementById("log");
    if (!table || !table.dataset.events || !window.EventSource) return;
    const state = document.getElementById("live-state");
    const empty = document.getElementById("log-empty");
    const keep = 500;
    const source = new EventSource(table.dataset.events);
    source.addEventListener("open", function () {
      if (state) state.textContent = "Live: new requests appear at the top as they are served.";
      table.setAttribute("aria-busy", "false");
    });
    source.addEventListener("error", function () {
      if (state) state.textContent = "Reconnecting to the live log…";
    });
    source.addEventListener("entry", function (ev) {
      const doc = parse("<table>" + ev.data + "</table>");
      const body = doc.querySelector("tbody.entry");
      if (!body) return;
      if (table.querySelector('tbody.entry[data-seq="' + body.dataset.seq + '"]')) return;
      const entry = document.adoptNode(body);
      entry.classList.add("fresh");
      const head = table.tHead;
      table.insertBefore(entry, head ? head.nextSibling : table.firstChild);
      const all = table.querySelectorAll("tbody.entry");
      for (let k = keep; k < all.length; k++) all[k].remove();
      if (empty) empty.hidden = true;
      view.liveEntries++;
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }

  setupFilter();
  setupLive();
})();
