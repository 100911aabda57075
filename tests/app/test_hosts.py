"""app/hosts.py: the Host allow-list (DNS rebinding, reflected redirects) and proxy headers."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.hosts import HostAllowList, machine_names, split_host
from app.main import create_app


@pytest.fixture(scope="module")
def lan(tiny_models_dir):
    settings = Settings(models_dir=tiny_models_dir, allowed_hosts=["testserver", "Playground.School.LAN"])
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.2",
                                  "", "10.9.8.7", "127.0.0.1:evil", "localhost:evil.example", "[::1]:evil",
                                  "127.0.0.1:", "127.0.0.1:80:80", "localhost:8o", "localhost:123456", "[::1]x"])
def test_a_foreign_host_gets_400_in_the_json_shape(lan, host):
    for path in ["/api/health", "/", "/api/models/", "/static/style.css"]:
        r = lan.get(path, headers={"host": host}, follow_redirects=False)
        assert r.status_code == 400, (host, path)
        assert r.json()["parameter"] == "Host" and "--allowed-hosts" in r.json()["detail"]
        assert "evil" not in r.text  # the name is not reflected
        assert r.headers["x-content-type-options"] == "nosniff" and "content-security-policy" in r.headers
    r = lan.post("/api/next-token", json={"prompt": "the"}, headers={"host": host})
    assert r.status_code == 400


def test_a_browser_on_an_unknown_name_gets_a_readable_page(lan):
    """A student who typed a LAN name not in --allowed-hosts sees words, not raw JSON; API clients keep JSON."""
    page = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # what a browser sends for a page
    for path in ["/", "/mask-fill", "/join?code=ABC"]:
        r = lan.get(path, headers={"host": "pc-07.school.example", "accept": page})
        assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
        assert "<h1>This address does not open the Playground</h1>" in r.text and "--allowed-hosts" in r.text
        assert "pc-07" not in r.text  # the name is not reflected
        assert r.headers["x-content-type-options"] == "nosniff" and "content-security-policy" in r.headers
    for headers in ({"accept": "application/json"}, {"accept": page}):  # the API answers JSON, whatever is asked
        r = lan.get("/api/health", headers={"host": "pc-07.school.example", **headers})
        assert r.status_code == 400 and r.json()["parameter"] == "Host"
    r = lan.get("/", headers={"host": "pc-07.school.example"})  # no Accept: the JSON shape
    assert r.status_code == 400 and r.json()["parameter"] == "Host"


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "app.localhost",
                                  "playground.school.lan", "PLAYGROUND.school.lan:8000"])
def test_local_names_and_the_configured_name_are_served(lan, host):
    assert lan.get("/api/health", headers={"host": host}).status_code == 200


def test_this_machines_names_and_addresses_are_allowed_by_default():
    names = machine_names()
    assert {"localhost", "127.0.0.1", "::1"} <= names
    guard = HostAllowList(app=None)
    assert all(guard.allows(n) for n in names)
    assert not guard.allows("evil.example")
    # the address the connection came in on is ours, even if the scan of addresses missed it
    assert guard.allows("192.168.77.5", server_addr="192.168.77.5")
    assert not guard.allows("192.168.77.5", server_addr="127.0.0.1")
    assert HostAllowList(app=None, allowed=["*"]).allows("anything.example")


def test_redirects_name_only_allowed_hosts(lan):
    """A trailing-slash redirect carries the Host: with the allow-list it is always one of ours."""
    r = lan.get("/api/models/", headers={"host": "playground.school.lan:8000"}, follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "http://playground.school.lan:8000/api/models"
    r = lan.get("/api/models/", headers={"host": "evil.example"}, follow_redirects=False)
    assert r.status_code == 400 and "location" not in r.headers


def test_split_host():
    assert split_host("Example.COM:80") == "example.com"
    assert split_host("[::1]:8000") == "::1" and split_host("::1") == "::1"
    assert split_host("name.") == "name"
    # a port is 1-5 ASCII digits; anything else after the ":" makes the whole value no name (issue 53)
    for bad in ["127.0.0.1:evil", "127.0.0.1:", "localhost:8000x", "localhost:٨٠", "[::1]:evil", "[::1]8000",
                "localhost:123456"]:
        assert split_host(bad) == "", bad
    assert split_host("localhost:65535") == "localhost" and split_host("[::1]") == "::1"
