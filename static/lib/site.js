/* Where the playground lives: the folder that holds static/, computed from this file's own URL, so
   the pages work at the root of a host (the app, `python -m app`) and under any path prefix (a
   static copy published as https://school.example/playground/, a GitHub Pages project site).
   ROOT         the site's root URL, ending in "/"
   siteUrl(p)   "/api/models" -> ROOT + "api/models" (a path the app serves at its root); any
                other URL (relative "x", "https://…") is returned as it was */
export const ROOT = new URL("../../", import.meta.url).href;

export function siteUrl(path) {
  return typeof path === "string" && path.startsWith("/") && !path.startsWith("//") ? ROOT + path.slice(1) : path;
}
