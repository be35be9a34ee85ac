// Yinji: the little JavaScript the pages use. Loaded from /static (the CSP forbids
// inline scripts). Every page works without it, except live job progress (pages fall
// back to a meta refresh) and the linked scrolling of passages.
"use strict";

(function () {
  // Forms with data-confirm ask before submitting (deletions, token replacement).
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  // Side by side: clicking a passage on one side brings its counterpart on the other
  // side into view, and marks both.
  function showPassage(n) {
    var marks = document.querySelectorAll("mark.passage.active");
    for (var i = 0; i < marks.length; i++) marks[i].classList.remove("active");
    ["s", "m"].forEach(function (side) {
      var el = document.getElementById(side + "-p" + n);
      if (!el) return;
      el.classList.add("active");
      var pane = el.closest(".fulltext");
      if (pane) {
        // Scroll inside the pane only, so both sides move independently.
        pane.scrollTop = el.offsetTop - pane.offsetTop - pane.clientHeight / 3;
      }
    });
    var first = document.getElementById("s-p" + n) || document.getElementById("m-p" + n);
    if (first) {
      var pane = first.closest(".sidebyside");
      if (pane) pane.scrollIntoView({ block: "start", behavior: "smooth" });
    }
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-p]") : null;
    if (!target) return;
    var n = target.getAttribute("data-p");
    if (!/^[0-9]+$/.test(n)) return;
    event.preventDefault();
    showPassage(n);
    if (history.replaceState) history.replaceState(null, "", "#s-p" + n);
  });

  window.addEventListener("DOMContentLoaded", function () {
    var m = /^#[sm]-p([0-9]+)$/.exec(window.location.hash);
    if (m) showPassage(m[1]);
  });

  // Job page: poll the job's status and reload when it is done (the server renders
  // the result).
  window.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("job");
    if (!box || box.getAttribute("data-done") === "true") return;
    var url = box.getAttribute("data-status-url");
    var bar = document.getElementById("job-progress");
    var text = document.getElementById("job-text");
    var state = document.getElementById("job-state");
    var delay = 700;
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (job) {
          if (typeof job.progress === "number") bar.value = job.progress;
          if (job.total) text.textContent = (job.done || 0) + " / " + job.total;
          // The 发现 page: the run's counts so far (its template in the page's language).
          var counts = document.getElementById("discover-live-counts");
          var runUrl = counts && counts.getAttribute("data-run-url");
          if (runUrl) {
            fetch(runUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
              .then(function (r) { return r.ok ? r.json() : null; })
              .then(function (run) {
                if (!run) return;
                var t = counts.getAttribute("data-template") || "";
                counts.textContent = t.replace("{fetched}", run.fetched).replace("{checked}", run.checked)
                  .replace("{matched}", run.matched);
              })
              .catch(function () {});
          }
          if (job.state && /^[A-Z]+$/.test(job.state)) {
            // The page carries each state's name in its language (data-label-*):
            // never show the raw state ("PROGRESS") to a reader.
            var label = box.getAttribute("data-label-" + job.state.toLowerCase());
            state.textContent = label || state.textContent;
            state.className = "badge state-" + job.state.toLowerCase();
          }
          // A rebuild's chunks: their rows follow; a new plan (more rows) reloads.
          var parts = document.getElementById("job-parts");
          var rows = parts ? parts.tBodies[0].rows : [];
          if (job.parts && job.parts.length !== rows.length) {
            window.location.reload();
            return;
          }
          (job.parts || []).forEach(function (part, i) {
            var badge = rows[i].cells[1].firstElementChild;
            var label = box.getAttribute("data-label-" + String(part.state).toLowerCase());
            if (label) badge.textContent = label;
            badge.className = "badge state-" + String(part.state).toLowerCase();
            rows[i].cells[2].textContent = part.done + " / " + part.total;
          });
          if (job.state === "SUCCESS" || job.state === "FAILURE" || job.error ||
              (job.progress === 1 && job.result)) {
            window.location.reload();
            return;
          }
          delay = Math.min(delay * 1.3, 4000);
          window.setTimeout(poll, delay);
        })
        .catch(function () {
          delay = Math.min(delay * 2, 10000);
          window.setTimeout(poll, delay);
        });
    }
    window.setTimeout(poll, delay);
  });
})();
