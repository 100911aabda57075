/* Instructor login: the printed URL carries the token in its #fragment, which browsers never send to
   the server. Take it out of the address bar (and so out of history) at once, then post it. */
"use strict";

(function () {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return;
  history.replaceState(null, "", location.pathname);
  const input = document.getElementById("login-token");
  input.value = decodeURIComponent(match[1]);
  document.getElementById("login-form").submit();
})();
