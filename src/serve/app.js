// fm serve: the live fleet. The page works without this script (forms
// post, links load); with it, #rows and #wakes are replaced as the server
// sends each new fleet version (already escaped HTML), and
// body.dataset.version follows the server's version number.
(function () {
  "use strict";
  if (!window.EventSource || !document.getElementById("rows")) return;
  var es = new EventSource("/events");
  function swap(id, html) {
    var old = document.getElementById(id);
    if (!old || typeof html !== "string") return;
    var t = document.createElement("template");
    t.innerHTML = html;
    var fresh = t.content.getElementById(id);
    if (fresh) old.replaceWith(fresh);
  }
  es.addEventListener("fleet", function (e) {
    var d;
    try { d = JSON.parse(e.data); } catch (_) { return; }
    swap("rows", d.rows);
    swap("wakes", d.wakes);
    // "Mark wakes seen" marks what the feed shows now, no more.
    var w = document.getElementById("wakes");
    var f = document.getElementById("wakes-seen");
    if (w && f && f.elements.upto && f.elements.hosts) {
      f.elements.upto.value = w.dataset.upto || "0";
      f.elements.hosts.value = w.dataset.hosts || "";
    }
    var u = document.getElementById("unseen");
    if (u) u.textContent = d.unseen + " new";
    document.body.dataset.version = String(d.version);
  });
})();
