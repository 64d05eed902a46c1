// memoryport ui: the only script the pages load (the Content-Security-Policy allows no other).
// Written for this project; no third-party code.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Budget gauges: width from data-percent (no inline styles under the CSP).
  for (const fill of document.querySelectorAll(".gauge .fill")) {
    const percent = Math.max(0, Math.min(100, Number(fill.dataset.percent) || 0));
    fill.style.width = percent + "%";
  }
  // Search as you type: refresh the results block from /sessions/results.
  const box = document.querySelector("input[data-live]");
  const results = document.getElementById("results");
  if (!box || !results) return;
  const MIN_CHARS = 3; // one or two letters match too much to be worth a request
  let timer = 0;
  let latest = 0;
  box.addEventListener("input", () => {
    clearTimeout(timer);
    const typed = box.value.trim();
    if (typed.length > 0 && typed.length < MIN_CHARS) return;
    timer = setTimeout(async () => {
      const ticket = ++latest;
      const params = new URLSearchParams(new FormData(box.form));
      const response = await fetch(box.dataset.live + "?" + params.toString());
      if (ticket !== latest || !response.ok) return;
      // The fragment is rendered by the server with every stored text escaped.
      results.innerHTML = await response.text();
      history.replaceState(null, "", "/sessions?" + params.toString());
    }, 150);
  });
});
