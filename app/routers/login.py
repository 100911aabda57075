"""Instructor login and logout (pages and form posts; the rules are in app/auth.py)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from .. import auth, deps
from .. import errors
from ..errors import ApiError

router = APIRouter(tags=["login"])


@router.post("/login", include_in_schema=False)
async def login(request: Request, settings: deps.SettingsDep):
    """Form field `token` (or JSON {"token"}): sets a new session cookie and redirects to /teach."""
    token = settings.instructor_token
    if not auth.same_site(request):
        raise ApiError("log in from this site's own login page", "token", status=403)
    raw = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            given = str(json.loads(raw).get("token", ""))
        except (ValueError, AttributeError):
            given = ""
        except RecursionError:  # nested thousands deep: a 400 naming the body, no traceback
            raise ApiError(errors.TOO_DEEP, None, status=400) from None
    else:
        given = (parse_qs(raw.decode("utf-8", errors="replace")).get("token") or [""])[0]
    given = given.strip()
    if not given:
        raise ApiError("token is required", "token", status=401)
    if not auth.valid_text(given):  # a lone surrogate (JSON's "\ud800"): no token has one; counted as a guess
        auth.check_guess(request, lambda: False, 400, "token must be text: it holds a lone surrogate "
                         "(\\ud800-\\udfff), which no token has")
    auth.check_guess(request, lambda: bool(token) and auth.same(given, token), 403, "the instructor token is wrong")
    response = RedirectResponse("/teach", status_code=303)  # the class's start page: lessons, a class, the last ones
    response.set_cookie(auth.COOKIE, auth.sessions(request).new(), httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/", max_age=auth.SESSION_TTL_S)
    return response


@router.post("/logout", include_in_schema=False)
def logout(request: Request):
    """Revokes this browser's session (that login only). Refused from another site's pages."""
    if not auth.same_site(request):
        raise ApiError("log out from this site's own pages", "token", status=403)
    cookie = request.cookies.get(auth.COOKIE)
    if cookie:
        auth.sessions(request).revoke(cookie)
    response = RedirectResponse("/train", status_code=303)
    response.delete_cookie(auth.COOKIE, path="/")
    return response
