// mdrag page: search as you type (the server renders the results), and keys to move through hits.
"use strict";
(function () {
  const DEBOUNCE_MS = 60;
  const POLL_INDEXING_MS = 2000;
  // Timings of each search, for the tests and for anyone curious: ms from the last keystroke
  // (debounce included) and from the request to the results drawn.
  window.mdragTimings = [];

  function hits() {
    return Array.from(document.querySelectorAll("#results .hit-link"));
  }

  function setupSearch() {
    const form = document.getElementById("search");
    const results = document.getElementById("results");
    if (!form || !results) return;
    const box = form.elements.q;
    let timer = null;
    let poll = null;
    let sequence = 0;
    let typedAt = performance.now();

    function run() {
      const mine = ++sequence;
      const params = new URLSearchParams(new FormData(form));
      const asked = performance.now();
      history.replaceState(null, "", "./?" + params.toString());
      clearTimeout(poll);
      fetch("results?" + params.toString(), { credentials: "same-origin" })
        .then((response) => response.text())
        .then((html) => {
          if (mine !== sequence) return; // a later search has been asked since
          results.innerHTML = html;
          const drawn = performance.now();
          window.mdragTimings.push({ query: box.value, fromKey: drawn - typedAt, fromRequest: drawn - asked });
          results.dataset.done = String(mine);
          if (results.querySelector("[data-indexing]")) poll = setTimeout(run, POLL_INDEXING_MS);
        })
        .catch(() => {});
    }

    form.addEventListener("input", () => {
      typedAt = performance.now();
      clearTimeout(timer);
      timer = setTimeout(run, DEBOUNCE_MS);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(timer);
      run();
    });
    if (results.querySelector("[data-indexing]")) poll = setTimeout(run, POLL_INDEXING_MS);

    document.addEventListener("keydown", (event) => {
      const links = hits();
      const at = links.indexOf(document.activeElement);
      if (event.key === "/" && document.activeElement !== box) {
        event.preventDefault();
        box.focus();
        box.select();
      } else if (event.key === "ArrowDown" && (document.activeElement === box || at >= 0)) {
        event.preventDefault();
        if (links.length) links[Math.min(at + 1, links.length - 1)].focus();
      } else if (event.key === "ArrowUp" && at >= 0) {
        event.preventDefault();
        if (at === 0) box.focus();
        else links[at - 1].focus();
      } else if (event.key === "Escape" && at >= 0) {
        box.focus();
      }
    });
  }

  function setupNote() {
    const match = document.getElementById("match");
    if (!match) return;
    // After the browser's own jump to #match: a quarter of the window above it, for the context.
    window.addEventListener("load", () => {
      match.scrollIntoView({ block: "start" });
      window.scrollBy(0, -Math.round(window.innerHeight / 4));
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupSearch();
    setupNote();
  });
})();
