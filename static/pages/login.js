/* Instructor login: the printed URL carries the token in its #fragment, which browsers never send to
   the server. Take it out of the address bar (and so out of history) at once, then post it. */
const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
if (match) {
  history.replaceState(null, "", location.pathname);
  document.getElementById("login-token").value = decodeURIComponent(match[1]);
  document.getElementById("login-form").submit();
}
