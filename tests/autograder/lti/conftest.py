"""The loopback LMS and the tool, each served on 127.0.0.1 on a free port."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import tornado.httpserver
import tornado.netutil
import tornado.web

from autograder import REPO_ROOT
from autograder.lti.store import ToolHome
from autograder.lti.web import routes

sys.path.insert(0, str(Path(__file__).parent))
from platform_app import (CLIENT_ID, DEPLOYMENT_ID, INSTRUCTOR, LEARNER,  # noqa: E402
                          LoopbackPlatform)

#: Generous: one request on a loaded two-core machine.
HTTP_DEADLINE = 60
#: A grade run of one notebook per student, on a loaded machine.
GRADE_DEADLINE = 900


class ToolServer:
    """The tool's tornado routes on their own event loop in a thread."""

    def __init__(self, home: ToolHome):
        self.sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.url = f"http://127.0.0.1:{self.sockets[0].getsockname()[1]}"
        self.home = home
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        app = tornado.web.Application(routes(self.home))
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets(self.sockets)
        self.ready.set()
        self.loop.run_forever()

    def start(self) -> "ToolServer":
        self.thread.start()
        assert self.ready.wait(HTTP_DEADLINE)
        return self

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(HTTP_DEADLINE)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=GRADE_DEADLINE)


@dataclass
class Loopback:
    platform: LoopbackPlatform
    tool: ToolServer
    home: ToolHome

    def register(self) -> subprocess.CompletedProcess:
        p = self.platform
        return cli("lti", "register", "--tool-dir", str(self.home.root), "--issuer", p.issuer,
                   "--client-id", CLIENT_ID, "--auth-login-url", f"{p.url}/authorize",
                   "--auth-token-url", f"{p.url}/token", "--key-set-url", f"{p.url}/jwks",
                   "--deployment-id", DEPLOYMENT_ID)

    def start_launch(self, user: str, assignment: str = "", link: str = "link-1"
                     ) -> tuple[requests.Session, dict, dict]:
        """A browser's way to the launch: the platform's launch link, the tool's login,
        the platform's authorization. ``(session, form fields, authorization query)``."""
        browser = requests.Session()
        page = browser.get(f"{self.platform.url}/launch/{user}",
                           params={"resource_link": link, "assignment": assignment},
                           timeout=HTTP_DEADLINE)
        assert page.status_code == 200, page.text
        query = {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.text))
        return browser, {k: unescape(v) for k, v in fields.items()}, query

    def post_launch(self, browser: requests.Session, fields: dict) -> requests.Response:
        return browser.post(f"{self.tool.url}/lti/launch", data=fields, timeout=HTTP_DEADLINE)

    def launch(self, user: str, assignment: str = "") -> requests.Response:
        browser, fields, _ = self.start_launch(user, assignment)
        return self.post_launch(browser, fields)


@pytest.fixture
def loopback(tmp_path):
    home = ToolHome.at(tmp_path / "tool")
    tool = ToolServer(home).start()
    platform = LoopbackPlatform(tool.url).start()
    platform.add_member("lms-user-ada", "Ada Lovelace", "ada@example.edu", [LEARNER])
    platform.add_member("lms-user-alan", "Alan Turing", "alan@example.edu", [LEARNER])
    platform.add_member("lms-user-prof", "Grace Hopper", "grace@example.edu", [INSTRUCTOR])
    yield Loopback(platform, tool, home)
    platform.stop()
    tool.stop()
