/* Robust Queue: the auto-refresh toggle of the overview and the job lists.
 *
 * A file, not an inline script: a strict CSP (script-src 'self') allows it.
 * One timer, one reload at most every INTERVAL ms; nothing while the tab is
 * hidden or while rows are selected for an action. The choice is kept in
 * localStorage for every page that offers it.
 */
(function () {
  "use strict";
  var INTERVAL = 10000; // ms; the floor is 5 s
  var KEY = "robust_queue.autoRefresh";
  var timer = null;

  function enabled() {
    try { return window.localStorage.getItem(KEY) === "on"; } catch (e) { return false; }
  }

  function remember(on) {
    try { window.localStorage.setItem(KEY, on ? "on" : "off"); } catch (e) { /* private mode */ }
  }

  function busy() {
    return document.hidden || document.querySelector("input.action-select:checked") !== null;
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = null;
    if (!enabled()) { return; }
    timer = window.setTimeout(function () {
      if (busy()) { schedule(); } else { window.location.reload(); }
    }, INTERVAL);
  }

  function init() {
    var box = document.getElementById("rq-auto-refresh");
    if (!box) { return; }
    box.checked = enabled();
    box.closest(".rq-refresh").hidden = false;
    box.addEventListener("change", function () { remember(box.checked); schedule(); });
    schedule();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}());
