/* A projector screen that never scrolls: fitScreen(root) watches `root` and, whenever what it shows is
   taller or wider than the screen (six hidden characters with their bars, a long concept question with
   its explanation), shrinks the page's type step by step (the --fit factor on <html>, which the
   projector's root font size is multiplied by, static/stage.css) until everything fits, never below
   `min` of the designed size; when the content shrinks again the type grows back. Layout only. */
export function fitScreen(root, opts) {
  const min = (opts && opts.min) || 0.6;
  const html = document.documentElement;
  let queued = false;
  const over = () => html.scrollHeight > innerHeight || html.scrollWidth > innerWidth;
  const fit = () => {
    queued = false;
    html.style.removeProperty("--fit");
    if (!html.classList.contains("projector") || !over()) return;
    let lo = min, hi = 1; // the largest factor that fits, to within 1 %
    while (hi - lo > 0.01) {
      const mid = (lo + hi) / 2;
      html.style.setProperty("--fit", String(mid));
      if (over()) hi = mid; else lo = mid;
    }
    html.style.setProperty("--fit", String(lo));
  };
  const queue = () => { if (!queued) { queued = true; requestAnimationFrame(fit); } };
  new MutationObserver(queue).observe(root, { childList: true, subtree: true, characterData: true, attributes: true,
    attributeFilter: ["class", "hidden"] });
  addEventListener("resize", queue);
  queue();
}
