"""Fair limits on class sessions, per client address (app/limits.py), so that one student's
script cannot lock the class out:

- new nicknames: each address may add JOIN_BURST nicknames at once, then one every
  JOIN_EVERY_S (whatever the session): 6 at once and 4 a minute, so that three addresses (phone
  Wi-Fi, mobile data, a laptop) cannot fill a class of 60 (18 at once, 30 in the first 3 minutes),
  while a class whose phones have their own addresses (a school Wi-Fi, a reverse proxy passing
  X-Forwarded-For) is never slowed. A browser getting its own nickname back (its cookie) costs
  nothing, and a student the teacher lets in by nickname (`admit`) needs none of it. A class
  behind one NAT address shares the budget: `--class-join-burst` raises it.
- code guesses: a join code (or a rejoin code) that matches nothing costs one of CODE_BURST
  guesses, then one every CODE_EVERY_S; once spent, requests of that address naming a code are
  refused (429) before the code is looked up, so a guesser learns nothing more. A student who
  types the right code spends nothing, and a student who has joined (holds the session's cookie)
  or the instructor is never refused by it: only guesses are budgeted, so one guesser behind a
  shared address (a school NAT) does not lock out the classmates already in. A join carrying the
  session's join key (the QR link's: app/classes/joinkey.py) is let past a spent address.

Both answer 429 with Retry-After and the parameter they are about (`nickname`, `code`)."""
from __future__ import annotations

from fastapi import Request

from .. import auth
from ..errors import ApiError
from ..limits import PerClient, client_address, retry_after
from . import projector
from .codes import cookie_name
from .service import has_joined

JOIN_BURST, JOIN_EVERY_S = 6, 15.0
CODE_BURST, CODE_EVERY_S = 20, 3.0
CODE_GLOBAL_BURST, CODE_GLOBAL_EVERY_S = 200, 0.5  # every address together (quiet ones never refused)
GUESSED = ("code", "rejoin")  # the parameters of a 404 that counts as a guess


def limits(request: Request) -> tuple[PerClient, PerClient]:
    """(new nicknames, code guesses) of this server process."""
    state = request.app.state
    if getattr(state, "class_limits", None) is None:
        s = state.settings
        burst = getattr(s, "class_join_burst", JOIN_BURST)
        every = getattr(s, "class_join_every_s", JOIN_EVERY_S)
        state.class_limits = (PerClient(burst, every),
                              PerClient(CODE_BURST, CODE_EVERY_S, CODE_GLOBAL_BURST, CODE_GLOBAL_EVERY_S))
    return state.class_limits


def spent(wait: float) -> ApiError:
    """The answer to every request naming a code from an address whose guesses are spent: the same
    for a right code and a wrong one (app/classes/door.py: a right one's join also knocks)."""
    retry = retry_after(wait)
    return ApiError(f"too many join codes that match no class came from this network (the Wi-Fi or mobile "
                    f"connection you are on) in a short time; check the code on the projector. If it is right, "
                    f"your teacher sees your nickname at the door and can let you in: this page tries again "
                    f"in {retry} s", "code", status=429, headers={"Retry-After": retry})


def code_guard(request: Request):
    """A dependency for every route naming a session by its code: refuses an address whose guesses
    are spent (before anything is looked up) and counts the guesses that miss. A join from such an
    address is left to the door (request.state.door: the refusal it gets unless let in)."""
    guesses, client = limits(request)[1], client_address(request)
    wait = guesses.wait_s(client)
    if wait > 0 and not known(request):
        if request.method == "POST" and request.url.path.endswith(("/join", "/projector")):
            # left to the route, which reads the body's key: a right join key or projector key (128 or
            # more random bits: not guessable) gets in; anything else gets this same refusal
            request.state.door = spent(wait)
        else:
            raise spent(wait)
    try:
        yield
    except ApiError as e:
        if e.status == 404 and e.parameter in GUESSED:
            guesses.spend(client)
        raise


def known(request: Request) -> bool:
    """Is this a student of the session named in the path (a valid participant cookie for it), its
    projector (the projector link's cookie), or the instructor? None of them is guessing. Asked only of an address whose guesses are spent."""
    code = request.path_params.get("code", "")
    try:
        cookie = request.cookies.get(cookie_name(code))
    except ApiError:  # not a code at all
        return False
    classes = getattr(request.app.state, "classes", None)
    if cookie and classes is not None and has_joined(classes.db, code, cookie):
        return True
    if classes is not None and projector.is_projector(request, classes.db, code):
        return True  # the projector's own link (its cookie holds the session's projector key)
    return auth.is_instructor(request)  # a logged-in browser (a random cookie; a Bearer token is a guess)


class JoinBudget:
    """The address's budget of new nicknames: `take` (from service.join, just before a nickname is
    added: a browser getting its own back never reaches it) raises 429 when it is spent; `refund`
    gives it back when the nickname was not added after all (taken, a lost race)."""

    def __init__(self, request: Request):
        self.budget, self.client = limits(request)[0], client_address(request)
        self.taken = False

    def check(self) -> None:
        """Before any database work: 429 at once when the budget is spent (nothing spent here), so a
        flood's refused joins cost no write transaction."""
        wait = self.budget.wait_s(self.client)
        if wait > 0:
            self._refuse(wait)

    def _refuse(self, wait: float) -> None:
        retry = retry_after(wait)
        raise ApiError(f"too many new nicknames came from this network (the Wi-Fi or mobile connection you are "
                       f"on) in a short time; try again in {retry} s, or ask your teacher", "nickname",
                       status=429, headers={"Retry-After": retry})

    def take(self) -> None:
        wait = self.budget.take(self.client)
        if wait > 0:
            self._refuse(wait)
        self.taken = True

    def refund(self) -> None:
        if self.taken:
            self.taken = False
            self.budget.refund(self.client)
