// The fleet console's only script: it refreshes the rows in place and
// copies DIDs and commands. No framework, nothing from another origin.
"use strict";
(function () {
  var rows = document.getElementById("rows");
  if (rows) {
    var every = parseInt(rows.getAttribute("data-refresh-ms"), 10) || 5000;
    var src = rows.getAttribute("data-src");
    var tick = function () {
      fetch(src, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) {
          if (r.status === 401) { window.location.reload(); return null; }
          return r.ok ? r.text() : null;
        })
        .then(function (html) {
          if (html !== null) {
            rows.innerHTML = html;
            rows.setAttribute("data-updated", String(Date.now()));
          }
        })
        .catch(function () { /* the next tick tries again */ })
        .finally(function () { window.setTimeout(tick, every); });
    };
    window.setTimeout(tick, every);
  }
  document.addEventListener("click", function (e) {
    var b = e.target.closest("button[data-copy]");
    if (!b || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
      var was = b.textContent;
      b.textContent = "copied";
      window.setTimeout(function () { b.textContent = was; }, 1200);
    });
  });
})();
