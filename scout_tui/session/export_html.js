// Branch switching for scout-tui's HTML export: show one branch's conversation, its shared
// messages first (from the sections of its ancestors, up to each fork point), then its own.
// Without this script every section stays visible. Allowed by the page's CSP hash only.
(function () {
  "use strict";
  var sections = {};
  document.querySelectorAll("section.branch").forEach(function (s) { sections[s.dataset.branch] = s; });

  function show(id) {
    if (!sections[id]) { return; }
    var limits = {}, limit = Infinity, at = id;
    while (at && sections[at] && !(at in limits)) {  // the chain, and how far each ancestor is shared
      limits[at] = limit;
      limit = Math.min(limit, Number(sections[at].dataset.start));
      at = sections[at].dataset.parent;
    }
    Object.keys(sections).forEach(function (key) {
      var section = sections[key], on = key in limits;
      section.classList.toggle("on", on);
      section.classList.toggle("shared", on && key !== id);
      if (!on) { return; }
      section.querySelectorAll("[data-index]").forEach(function (el) {
        el.classList.toggle("hidden", Number(el.dataset.index) >= limits[key]);
      });
      var empty = section.querySelector(".empty");
      if (empty) { empty.classList.toggle("hidden", key !== id); }
    });
    document.querySelectorAll(".branch-link").forEach(function (a) {
      a.classList.toggle("shown", a.dataset.branch === id);
    });
  }

  function follow() {
    var hash = decodeURIComponent(location.hash.slice(1));
    var target = hash ? document.getElementById(hash) : null;
    if (target && target.matches("section.branch")) {
      show(target.dataset.branch);
      window.scrollTo(0, 0);
      return;
    }
    var owner = target ? target.closest("[data-owner]") : null;
    if (owner) {  // a message, a mark, or a tool call in one (opened)
      if (!owner.closest("section.on") || owner.classList.contains("hidden")) { show(owner.dataset.owner); }
      if (target.tagName === "DETAILS") { target.open = true; }
      target.scrollIntoView();
      return;
    }
    show(document.body.dataset.current);
  }

  document.body.classList.add("js");
  window.addEventListener("hashchange", follow);
  follow();
}());
