// The fleet console's only script: it refreshes the rows in place, shows
// times in the browser's time zone and copies DIDs and commands. No
// framework, nothing from another origin. Without it the page shows the
// times in UTC.
"use strict";
(function () {
  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  // local rewrites each <time datetime> under root (the server writes its
  // UTC text, and "UTC …" in its title) in the browser's zone.
  var local = function (root) {
    var ts = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < ts.length; i++) {
      var d = new Date(ts[i].getAttribute("datetime"));
      if (isNaN(d.getTime())) { continue; }
      var hm = pad(d.getHours()) + ":" + pad(d.getMinutes());
      var f = ts[i].getAttribute("data-format");
      if (f === "seconds") { hm += ":" + pad(d.getSeconds()); }
      ts[i].textContent = f === "time" ? hm :
        d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hm;
      ts[i].setAttribute("data-local", "1");
    }
  };
  local(document);
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
            local(rows);
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
