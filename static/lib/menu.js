/* The site menu on a phone (issue 51): below 601 px the navigation and the header's buttons fold behind
   one "Menu" button (static/phone.css), so a phone's first screen shows the page's own controls, not a
   screen of links. A classic script placed right after the header, not a module: it runs before the rest
   of the page is drawn, so a phone never flashes the open navigation first. Without it (scripts off, or
   an old browser) nothing folds and every link stays on the page.
   The button says whether the menu is open (aria-expanded); Escape closes it and gives the focus back to
   the button; a tap anywhere else on the page, or on one of its buttons, closes it too. */
(function () {
  var header = document.querySelector(".site-header");
  var button = document.getElementById("menu-toggle");
  if (!header || !button) return;
  header.classList.add("has-menu");
  function open() { return button.getAttribute("aria-expanded") === "true"; }
  function set(on) {
    header.classList.toggle("is-open", on);
    button.setAttribute("aria-expanded", on ? "true" : "false");
  }
  button.addEventListener("click", function () { set(!open()); });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || !open()) return;
    var inside = header.contains(document.activeElement);
    set(false);
    if (inside) button.focus();
  });
  document.addEventListener("click", function (e) {
    if (open() && !header.contains(e.target)) set(false);
  });
  // "Copy link" opens the share panel just below: the menu steps aside for it (so does Projector mode)
  header.addEventListener("click", function (e) {
    var pressed = e.target.closest && e.target.closest("button");
    if (pressed && pressed !== button && open()) set(false);
  });
})();
