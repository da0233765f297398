"""A colleague on another machine, over a real WireGuard tunnel: the ``tailcat`` transport end to end.

One room, one tunnel, one module-scoped fixture (tests/overlay.py): the
room runs in the ``room`` network namespace with ``ce serve FILE
--transport tailcat --address 10.213.0.1`` (an address of the room side's
``wireguard-go`` interface); "the other machine" is processes in the
``peer`` namespace with their own ``HOME`` and the room's folders covered by
an empty tmpfs. Each step prints what it did over the tunnel (``pytest -s``
shows them): the invitation's hint, join and read, a proposal approved on
the room's side and seen live, ``ce observe`` reconnecting across a room
restart, a board post, a handoff accepted and completed, ``ce mcp`` driven
by the official SDK's stdio client, the SDK straight to the overlay
address, the room's other ports closed from there, the Host and Origin
rules, a hint off the overlay refused, a LAN neighbour routing to the
overlay address refused by the kernel (the listener is bound to the
overlay interface), ``--allow-host`` and MagicDNS names, an invitation
carrying a name, a frozen room and a stalled large answer said in the
colleague's terms, the room moved to an IPv6 overlay address and the
session re-pointed, the address removed and put back, a revoked session
refused (its ``ce observe`` told so). Each
step stands alone, in any order: the fixture joins the peer once (bob,
through a tailcat invitation, its default session file), and a step that
joins or revokes does so with a session file of its own. The SSH local
forward (the other way in) runs over the same two namespaces' veth "LAN",
without the tunnel.

Skipped, with the reason printed, only where network namespaces cannot be
made (not root, no iproute2, a refusal); a missing wireguard-go, wg, sshd or
ssh is installed with apt-get first.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from commonroom import invitation
from commonroom.errors import EXIT_CODES
from tests.overlay import Overlay, SshForward, cannot_make_namespaces, ensure_ssh, ensure_wireguard, serve_tailcat
from tests.roomproc import Room, ce_path

TEXT = "# Plan\n\nline one\n\n## Tasks\n\n- first\n"
CAPS = "read,observe,propose,handoff,message"
ROOT = Path(__file__).resolve().parents[2]
SDK_SCRIPT = ROOT / "tests" / "overlay_sdk.py"
#: the room's name in the peer's /etc/hosts, allowed with ce serve --allow-host
ROOM_NAME = "crroom.test"
#: a name the peer resolves to the room's LAN address (off the overlay)
LAN_NAME = "crlan.test"
#: the room's heartbeat on idle streams here (seconds; the default is 15): the observer expects the same
HEARTBEAT = 2
#: the MagicDNS name the room's fake ``tailscale status --json`` gives (allowed by default)
MAGICDNS = "crroom.tail0e5.ts.net"
FAKE_TAILSCALE = f"""#!/bin/sh
case "$1" in
  status) echo '{{"Self": {{"DNSName": "{MAGICDNS}."}}}}' ;;
  *) exit 1 ;;
esac
"""


def step(message: str) -> None:
    """One line of the test's report: what just worked over the tunnel."""
    print(f"  over the tunnel: {message}")


@dataclass
class Net:
    """The room, the tunnel and the two sides' ``ce``."""

    overlay: Overlay
    folder: Path  # the room's folder (hidden from the peer)
    room_home: Path
    peer_home: Path
    document: Path
    room: Room = field(init=False)
    peer_session: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the room's (PATH with the fake tailscale first)

    @property
    def tailcat_port(self) -> int:
        return int(self.room.state["ingress"]["transports"]["tailcat"]["port"])

    def room_ce(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``ce ARGS`` on the room's machine as alice (HOME room_home)."""
        return _done(subprocess.run(self.overlay.room("env", f"HOME={self.room_home}", ce_path(), *args),
                                    capture_output=True, text=True, timeout=60), check)

    def peer_command(self, *args: str) -> list[str]:
        """A command line run on the other machine (HOME peer_home, the room's files out of sight)."""
        return self.overlay.peer("env", f"HOME={self.peer_home}", *args, hide=(self.folder, self.room_home))

    def peer_ce(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``ce ARGS`` on the other machine."""
        return _done(subprocess.run(self.peer_command(ce_path(), *args), capture_output=True, text=True,
                                    timeout=60), check)

    def serve(self, ports: tuple[str, str, str] = ("0", "0", "0"), address: str | None = None) -> Room:
        """Start (or restart, on ``ports``; on another overlay ``address``) the room in its namespace."""
        self.room = serve_tailcat(self.overlay, self.document, ports, env=self.env,
                                  args=("--allow-host", ROOM_NAME.upper()), address=address)
        return self.room


def _done(done: subprocess.CompletedProcess, check: bool) -> subprocess.CompletedProcess:
    if check:
        assert done.returncode == 0, f"{done.args[-3:]}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _json(done: subprocess.CompletedProcess) -> Any:
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Net]:
    reason = cannot_make_namespaces()
    if reason:
        print(f"\nskipped: {reason}")
        pytest.skip(reason)
    ensure_wireguard()
    base = tmp_path_factory.mktemp("tailcat")
    overlay = Overlay(keys=base / "keys")
    try:
        overlay.up()
        folder, room_home, peer_home = base / "room", base / "room-home", base / "peer-home"
        for path in (folder, room_home, peer_home):
            path.mkdir()
        (folder / "doc.md").write_text(TEXT)
        net = Net(overlay, folder, room_home, peer_home, folder / "doc.md")
        bin_folder = base / "bin"
        bin_folder.mkdir()
        (bin_folder / "tailscale").write_text(FAKE_TAILSCALE)
        (bin_folder / "tailscale").chmod(0o755)
        net.env = {"PATH": f"{bin_folder}:{os.environ['PATH']}", "COMMONROOM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
        overlay.hosts(overlay.peer_ns, {ROOM_NAME: overlay.room_address, LAN_NAME: overlay.room_lan})
        net.serve()
        try:
            alice = net.room_ce("invite", str(net.document), "-p", "alice",
                                "--cap", "read,observe,propose,approve,handoff,message,write").stdout.strip()
            net.room_ce("join", alice)  # the room's own colleague, on loopback
            bob = net.room_ce("invite", str(net.document), "-p", "bob", "--cap", CAPS, "--transport",
                              "tailcat").stdout.strip()
            net.peer_session.update(_json(net.peer_ce("join", bob, "--json")))  # the colleague, over the tunnel
            yield net
        finally:
            net.room.stop()
    finally:
        overlay.down()


def test_invitation_carries_the_tailcat_hint(net: Net) -> None:
    answer = _json(net.room_ce("invite", str(net.document), "-p", "bob", "--cap", CAPS,
                               "--transport", "tailcat", "--json"))  # POST /owner/invitations
    hint = invitation.decode(answer["token"])["transport"]
    assert hint == {"type": "tailcat", "address": net.overlay.room_address, "port": net.tailcat_port,
                    "encrypted": True, "mode": "private"}
    loopback = invitation.decode(net.room_ce("invite", str(net.document), "-p", "x").stdout.strip())["transport"]
    assert loopback["type"] == "loopback" and loopback["address"] == "127.0.0.1"
    status = net.room_ce("status", str(net.document)).stdout
    assert f"tailcat {net.overlay.room_address}:{net.tailcat_port}" in status, status
    banner = net.document.with_name("doc.md.serve.log").read_text()
    assert "--cap read,observe,propose --transport tailcat\n" in banner, banner
    step(f"ce invite --transport tailcat gave {json.dumps(hint)}")


def test_join_and_read(net: Net) -> None:
    listing = subprocess.run(net.peer_command("ls", "-A", str(net.folder), str(net.room_home)),
                             capture_output=True, text=True)
    assert listing.returncode == 0 and not listing.stdout.replace(":", "").split()[2:], \
        f"the other machine must not see the room's files: {listing.stdout}"
    assert not subprocess.run(net.peer_command("test", "-e", str(net.document))).returncode == 0
    token = net.room_ce("invite", str(net.document), "-p", "bob", "--cap", CAPS, "--transport", "tailcat").stdout.strip()
    session = net.peer_home / "join-and-read.json"
    joined = _json(net.peer_ce("join", token, "--session-file", str(session), "--json"))
    assert json.loads(session.read_text())["transport"]["type"] == "tailcat"
    text = net.room_ce("read").stdout  # what the room's side reads now (another step may have edited it)
    assert net.peer_ce("read", "--session-file", str(session)).stdout == text
    step(f"ce join (session {joined['session']['id']}) and ce read: {len(text)} bytes, the document")


PAGE_PROBE = ("import json, sys, urllib.request\n"
              "link = sys.stdin.read().strip()\n"
              "base, _, body = link.partition('#join=')\n"
              "page = urllib.request.urlopen(base, timeout=10)\n"
              "html = page.read().decode()\n"
              "assert '/assets/page.js' in html, html[:200]\n"
              "script = urllib.request.urlopen(base + 'assets/page.js', timeout=10).read()\n"
              "join = urllib.request.Request(base + 'workspace/join', headers={'Content-Type': 'application/json'},\n"
              "    data=json.dumps({'invitation': 'commonroom://join/' + body, 'client': 'commonroom page'}).encode())\n"
              "joined = json.load(urllib.request.urlopen(join, timeout=10))\n"
              "print(page.status, bool(page.headers['Content-Security-Policy']), len(script) > 1000,\n"
              "      joined['session']['participant']['name'])\n")


def test_the_participant_page_over_the_tunnel(net: Net) -> None:
    """A colleague's browser opens ce invite --link's address over the overlay: the page, its script, the join."""
    link = net.room_ce("invite", str(net.document), "-p", "pat", "--cap", "read,observe", "--transport", "tailcat",
                       "--link").stdout.strip()
    assert link.startswith(f"http://{net.overlay.room_address}:{net.tailcat_port}/#join="), link
    done = subprocess.run(net.peer_command(sys.executable, "-c", PAGE_PROBE), input=link, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["200", "True", "True", "pat"], done.stdout + done.stderr
    step(f"the participant page over the tunnel: {link.split('#')[0]}, joined as pat")


BEARER_PROBE = ("import socket, sys\n"
                "address, port, token = sys.argv[1], int(sys.argv[2]), sys.stdin.read().strip()\n"
                "try:\n"
                "    with socket.create_connection((address, port), timeout=5) as sock:\n"
                "        sock.sendall(f'GET /workspace/room HTTP/1.1\\r\\nHost: {address}:{port}\\r\\n'\n"
                "                     f'Authorization: Bearer {token}\\r\\nConnection: close\\r\\n\\r\\n'.encode())\n"
                "        first = sock.recv(64)\n"
                "        print(first.split(b' ')[1].decode() if first else 'no answer: closed without a byte')\n"
                "except OSError as exc:\n"
                "    print('no answer:', type(exc).__name__)\n")


def test_lan_neighbour_routing_to_the_overlay_address_gets_no_byte(net: Net) -> None:
    overlay, port = net.overlay, str(net.tailcat_port)
    token = json.loads(Path(net.peer_session["session_file"]).read_text())["token"]

    def probe() -> str:
        done = subprocess.run(net.peer_command(sys.executable, "-c", BEARER_PROBE, overlay.room_address, port),
                              input=token, capture_output=True, text=True, timeout=60)
        return done.stdout.strip() + done.stderr.strip()

    assert probe() == "200"  # the control: through the tunnel
    route = ["ip", "-n", overlay.peer_ns, "route", "add", f"{overlay.room_address}/32", "via", overlay.room_lan]
    subprocess.run(route, check=True)
    try:
        lan = probe()
    finally:
        subprocess.run(["ip", "-n", overlay.peer_ns, "route", "del", f"{overlay.room_address}/32"], check=True)
    assert lan.startswith("no answer:"), lan  # refused by the kernel: the listener is bound to the overlay device
    assert probe() == "200"
    step(f"a LAN neighbour routing {overlay.room_address} via {overlay.room_lan} got {lan}; "
         "the same request through the tunnel got 200")


def test_allowed_names_on_both_session_listeners_never_the_owner_port(net: Net) -> None:
    overlay, port = net.overlay, str(net.tailcat_port)
    names = [ROOM_NAME, f"{MAGICDNS}:443", "elsewhere.test"]
    over = subprocess.run(net.peer_command(sys.executable, "-c", HOST_PROBE, overlay.room_address, port, *names),
                          capture_output=True, text=True, timeout=60)
    assert over.stdout.split() == [names[0], "401", names[1], "401", names[2], "421"], over.stdout + over.stderr
    for listener, expected in ((net.room.state["ingress"]["port"], "401"), (net.room.state["owner_port"], "421")):
        local = subprocess.run(overlay.room(sys.executable, "-c", HOST_PROBE, "127.0.0.1", str(listener),
                                            ROOM_NAME, MAGICDNS), capture_output=True, text=True, timeout=60)
        assert local.stdout.split() == [ROOM_NAME, expected, MAGICDNS, expected], local.stdout + local.stderr
    step(f"Host {ROOM_NAME} (--allow-host) and {MAGICDNS} (tailscale's MagicDNS name) answered on the tailcat "
         "listener and the loopback ingress (401 without a bearer), 421 on the owner port")


def test_invitation_naming_the_room_by_name(net: Net) -> None:
    token = net.room_ce("invite", str(net.document), "-p", "bob", "--cap", "read", "--transport", "tailcat",
                        "--address", ROOM_NAME).stdout.strip()
    hint = invitation.decode(token)["transport"]
    assert hint["address"] == ROOM_NAME and hint["port"] == net.tailcat_port, hint
    session = str(net.peer_home / "by-name.json")
    net.peer_ce("join", token, "--session-file", session)
    assert net.peer_ce("read", "--session-file", session).stdout.startswith("# Plan")
    unknown = net.room_ce("invite", str(net.document), "-p", "bob", "--transport", "tailcat", "--address",
                          "elsewhere.test", check=False)
    assert unknown.returncode == EXIT_CODES["invalid_request"] and "--allow-host" in unknown.stderr, unknown.stderr
    payload = invitation.decode(net.room_ce("invite", str(net.document), "-p", "bob", "--transport",
                                            "tailcat").stdout.strip())
    payload["transport"] = {**payload["transport"], "address": LAN_NAME}  # resolves to the LAN address
    refused = net.peer_ce("join", invitation.encode(payload), "--session-file", str(net.peer_home / "lan-name.json"),
                          check=False)
    assert refused.returncode == EXIT_CODES["transport_unavailable"], refused.stdout + refused.stderr
    assert f"{LAN_NAME} ({net.overlay.room_lan}) is not reached through" in refused.stderr, refused.stderr
    step(f"ce invite --address {ROOM_NAME}: the colleague resolved it through the overlay, joined and read; "
         f"{LAN_NAME}, resolving to the LAN, refused before a byte")


def test_proposal_approved_seen_live_and_observe_reconnects(net: Net) -> None:
    observer = Follower(net.peer_command(ce_path(), "observe", "--json"))
    try:
        observer.wait(lambda line: False, 1.0)  # connected and idle
        version = _json(net.peer_ce("call", "GET", "/workspace/room"))["head_version"]
        proposal = _json(net.peer_ce("propose", "--base", str(version), "--lines", "3-3",
                                     "--text", "line one, from the other machine\n", "--json"))
        proposal_id = proposal.get("proposal_id") or proposal["id"]
        net.room_ce("approve", proposal_id)
        seen = observer.wait(lambda e: e.get("type") == "proposal.approved")
        assert seen["payload"]["proposal_id"] == proposal_id
        assert "from the other machine" in net.peer_ce("read").stdout
        step(f"ce propose, approved on the room's side, seen live by ce observe (event #{seen['id']})")
        room = net.room
        ports = (str(room.state["ingress"]["port"]), str(room.state["owner_port"]), str(net.tailcat_port))
        room.stop()
        net.serve(ports)
        net.room_ce("write", "--text", TEXT, "--expected", str(seen["payload"]["version"]))
        after = observer.wait(lambda e: e.get("type") == "version.committed"
                              and e["payload"].get("version", 0) > seen["payload"]["version"], 30)
        assert any("reconnect" in line for line in observer.errors())
        step(f"the room restarted; ce observe reconnected and saw event #{after['id']}")
    finally:
        observer.stop()


def test_board_over_the_tunnel(net: Net) -> None:
    posted = _json(net.peer_ce("board", "post", "-", "note", "hello from the other machine", "--json"))
    listed = _json(net.room_ce("board", "list", posted["session_id"], "--json"))
    assert any(m["message_id"] == posted["message_id"] for m in listed["messages"])
    step(f"ce board post, read back on the room's side ({posted['message_id']})")


def test_handoff_accepted_and_completed(net: Net) -> None:
    created = _json(net.room_ce("handoff-create", "--summary", "check the plan", "--assignee", "bob", "--json"))
    handoff_id = created["handoff"]["id"]
    net.peer_ce("handoff-accept", handoff_id)
    net.peer_ce("handoff-complete", handoff_id, "--result", "checked from the other machine")
    shown = _json(net.room_ce("handoff", str(net.document), handoff_id, "--json"))
    shown = shown.get("handoff", shown)
    assert shown["status"] == "result_ready" and shown["result"] == "checked from the other machine", shown
    approved = _json(net.room_ce("handoff-approve", handoff_id, "--json"))
    assert approved["status"] == "approved", approved
    step(f"ce handoff-accept and ce handoff-complete of {handoff_id} (the room saw result_ready, approved it)")


def test_ce_mcp_driven_by_the_official_sdk(net: Net) -> None:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    from commonroom.protocol import MCP_VERSION

    command = net.peer_command(ce_path(), "mcp")

    async def run() -> tuple[str, int]:
        async with Client(StdioServerParameters(command=command[0], args=command[1:]), mode=MCP_VERSION) as client:
            tools = await client.list_tools()
            result = await client.call_tool("document_read", {})
            return json.dumps(result.model_dump(mode="json")), len(tools.tools)

    text, tools = asyncio.run(run())
    assert "line one" in text and "- first" in text, text  # the document (the write of the reconnect step)
    step(f"ce mcp (stdio) driven by the official SDK ({MCP_VERSION}): {tools} tools, document_read")


def test_sdk_straight_to_the_overlay_address(net: Net) -> None:
    url = f"http://{net.overlay.room_address}:{net.tailcat_port}/mcp"
    token = json.loads(Path(net.peer_session["session_file"]).read_text())["token"]
    done = subprocess.run(net.peer_command(sys.executable, str(SDK_SCRIPT), url), input=token,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "line one" in done.stdout and "- first" in done.stdout, done.stdout
    step(f"the official SDK straight to {url} with the bearer: document_read")


def test_room_ports_unreachable_from_the_other_machine(net: Net) -> None:
    state, overlay = net.room.state, net.overlay
    targets = [(address, port) for address in (overlay.room_address, overlay.room_lan)
               for port in (state["owner_port"], state["ingress"]["port"])]
    targets += [(overlay.room_lan, net.tailcat_port), ("127.0.0.1", state["owner_port"]),
                ("127.0.0.1", state["ingress"]["port"])]
    probe = ("import socket, sys\n"
             "for item in sys.argv[1:]:\n"
             "    host, port = item.rsplit(':', 1)\n"
             "    try:\n"
             "        socket.create_connection((host, int(port)), timeout=2).close(); print(item, 'open')\n"
             "    except OSError as exc:\n"
             "        print(item, 'closed', type(exc).__name__)\n")
    done = subprocess.run(net.peer_command(sys.executable, "-c", probe, *(f"{h}:{p}" for h, p in targets),
                                           f"{overlay.room_address}:{net.tailcat_port}"),
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert lines[-1].endswith(" open"), lines  # the control: the tailcat ingress answers
    assert all(" closed " in line for line in lines[:-1]), lines
    loopback = net.room_ce("invite", str(net.document), "-p", "lo").stdout.strip()
    refused = net.peer_ce("join", loopback, "--session-file", str(net.peer_home / "lo.json"), check=False)
    assert refused.returncode == EXIT_CODES["transport_unavailable"], refused.stderr
    step("the owner port and the loopback ingress are closed from there: " + "; ".join(lines[:-1]))


HOST_PROBE = ("import socket, sys\n"
              "address, port = sys.argv[1], int(sys.argv[2])\n"
              "for host in sys.argv[3:]:\n"
              "    with socket.create_connection((address, port), timeout=5) as sock:\n"
              "        sock.sendall(f'GET /workspace/room HTTP/1.1\\r\\nHost: {host}\\r\\n'\n"
              "                     'Connection: close\\r\\n\\r\\n'.encode())\n"
              "        print(host, sock.recv(64).split(b' ')[1].decode())\n")


def test_host_rule_names_the_overlay_address_on_its_listener_only(net: Net) -> None:
    overlay, port = net.overlay, net.tailcat_port
    names = [f"{overlay.room_address}:{port}", "commonroom", "127.0.0.1", "localhost", "evil.example"]
    over = subprocess.run(net.peer_command(sys.executable, "-c", HOST_PROBE, overlay.room_address, str(port), *names),
                          capture_output=True, text=True, timeout=60)
    assert over.stdout.split() == [names[0], "401", "commonroom", "401", "127.0.0.1", "421", "localhost", "421",
                                   "evil.example", "421"], over.stdout + over.stderr
    ingress = str(net.room.state["ingress"]["port"])
    local = subprocess.run(overlay.room(sys.executable, "-c", HOST_PROBE, "127.0.0.1", ingress,
                                        "127.0.0.1", overlay.room_address), capture_output=True, text=True, timeout=60)
    assert local.stdout.split() == ["127.0.0.1", "401", overlay.room_address, "421"], local.stdout + local.stderr
    step(f"Host {names[0]} and commonroom reach the room on the tailcat listener (401 without a bearer); "
         f"127.0.0.1, localhost, evil.example are 421 there, and {overlay.room_address} is 421 on loopback")


ORIGIN_PROBE = ("import sys\n"
                "from tests.mcp_wire import Mcp\n"
                "mcp = Mcp(sys.argv[1], sys.stdin.read().strip())\n"
                "for origin in sys.argv[2:]:\n"
                "    headers = {} if origin == '-' else {'Origin': origin}\n"
                "    print(origin, mcp.post('server/discover', headers=headers).status_code)\n")


def test_mcp_origin_rule_unchanged_over_the_tunnel(net: Net) -> None:
    base = f"http://{net.overlay.room_address}:{net.tailcat_port}"
    token = json.loads(Path(net.peer_session["session_file"]).read_text())["token"]
    origins = ["-", "http://127.0.0.1", "http://localhost:3000", f"http://{net.overlay.room_address}",
               "https://evil.example"]
    done = subprocess.run(net.peer_command("env", f"PYTHONPATH={ROOT}", sys.executable, "-c", ORIGIN_PROBE, base,
                                           *origins), input=token,
                          capture_output=True, text=True, timeout=60)
    statuses = dict(line.rsplit(" ", 1) for line in done.stdout.splitlines())
    assert statuses == {"-": "200", "http://127.0.0.1": "200", "http://localhost:3000": "200",
                        f"http://{net.overlay.room_address}": "403", "https://evil.example": "403"}, \
        done.stdout + done.stderr
    step("/mcp keeps the seed's Origin rule there: none, 127.0.0.1, localhost answered; "
         f"http://{net.overlay.room_address} and another site 403")


def test_dial_refuses_a_hint_off_the_overlay(net: Net) -> None:
    payload = invitation.decode(net.room_ce("invite", str(net.document), "-p", "lan", "--transport",
                                            "tailcat").stdout.strip())
    payload["transport"] = {**payload["transport"], "address": net.overlay.room_lan}  # the plain LAN
    refused = net.peer_ce("join", invitation.encode(payload), "--session-file", str(net.peer_home / "lan.json"),
                          "--json", check=False)
    assert refused.returncode == EXIT_CODES["transport_unavailable"], refused.stdout + refused.stderr
    assert "not reached through a WireGuard or Tailscale interface" in refused.stdout + refused.stderr
    step(f"a tailcat hint naming the LAN address {net.overlay.room_lan} is refused before any byte is sent")


def test_a_quiet_tunnel_is_noticed(net: Net) -> None:
    room, port = f"{net.overlay.room_address}:{net.tailcat_port}", net.tailcat_port
    observer = Follower(net.peer_command("env", f"COMMONROOM_HEARTBEAT_SECONDS={HEARTBEAT}", ce_path(), "observe",
                                         "--json"))
    try:
        observer.wait(lambda line: False, 1.0)  # connected and idle
        os.killpg(net.room.proc.pid, signal.SIGSTOP)  # the room's machine answers nothing: no byte comes back
        try:
            started = time.monotonic()
            quiet = net.peer_ce("read", check=False)
            took = time.monotonic() - started
        finally:
            os.killpg(net.room.proc.pid, signal.SIGCONT)
        assert quiet.returncode == EXIT_CODES["transport_unavailable"], quiet.stderr
        assert f"no answer from the room at {room} in 10 s (the answer stalled after 0 bytes): the overlay may be down" \
        in quiet.stderr, quiet.stderr
        assert "ask the room's operator" in quiet.stderr and "ce status" not in quiet.stderr, quiet.stderr
        assert took < 20, took
        said = "".join(observer.errors())
        assert f"no byte from the room at {room} for {2 * HEARTBEAT} s" in said and "reconnecting" in said, said
        version = _json(net.room_ce("status", str(net.document), "--json"))["room"]["head_version"]
        net.room_ce("write", "--text", TEXT + "\nafter a quiet tunnel\n", "--expected", str(version))
        observer.wait(lambda e: e.get("type") == "version.committed", 30)
    finally:
        observer.stop()
    step(f"a room that answers nothing: ce read failed in {took:.1f} s naming {room}; ce observe said so after "
         f"{2 * HEARTBEAT} s without a heartbeat, reconnected and saw the next write")


def test_a_stalled_large_answer_is_named(net: Net) -> None:
    version = _json(net.room_ce("status", str(net.document), "--json"))["room"]["head_version"]
    large = TEXT + "".join(f"- item {n}: {'words ' * 12}\n" for n in range(400))  # ~30 KB
    net.room_ce("write", "--text", large, "--expected", str(version))
    veth = ["ip", "-n", net.overlay.peer_ns, "link", "set", f"{net.overlay.tag}vp", "mtu"]
    subprocess.run([*veth, "1280"], check=True)  # the room's tunnel packets (up to 1480 bytes) are dropped
    try:
        stalled = net.peer_ce("read", check=False)
    finally:
        subprocess.run([*veth, "1500"], check=True)
    assert stalled.returncode == EXIT_CODES["transport_unavailable"], stalled.stderr
    assert "the answer stalled after" in stalled.stderr and "closed the connection" not in stalled.stderr, \
        stalled.stderr
    assert net.peer_ce("read").stdout == large
    step("packets over 1,280 bytes dropped on the way (an MTU black hole): ce read said "
         + stalled.stderr.split("ce: transport_unavailable: ")[-1].split(" — ")[0])


def test_an_ipv6_overlay_and_a_session_repointed(net: Net) -> None:
    overlay, port = net.overlay, net.tailcat_port
    ports = (str(net.room.state["ingress"]["port"]), str(net.room.state["owner_port"]), str(port))

    def move(address: str) -> None:
        net.room.stop()
        net.serve(ports, address)

    move(overlay.room_address6)
    try:
        lost = net.peer_ce("read", check=False)
        assert lost.returncode == EXIT_CODES["transport_unavailable"], lost.stderr
        assert f"{overlay.room_address}:{port}" in lost.stderr and "ask the room's operator" in lost.stderr, \
            lost.stderr
        assert "ce status" not in lost.stderr and "ce join --address HOST:PORT" in lost.stderr, lost.stderr
        net.peer_ce("join", "--address", f"[{overlay.room_address6}]:{port}")
        assert net.peer_ce("read").stdout.startswith("# Plan")
        version = _json(net.peer_ce("call", "GET", "/workspace/room"))["head_version"]
        proposal = _json(net.peer_ce("propose", "--base", str(version), "--lines", "3-3",
                                     "--text", "line one, over IPv6\n", "--json"))
        net.room_ce("approve", proposal.get("proposal_id") or proposal["id"])
        assert "over IPv6" in net.peer_ce("read").stdout
        token = net.room_ce("invite", str(net.document), "-p", "dora", "--cap", "read", "--transport",
                            "tailcat").stdout.strip()
        assert invitation.decode(token)["transport"]["address"] == overlay.room_address6
        session = str(net.peer_home / "dora.json")
        net.peer_ce("join", token, "--session-file", session)
        assert "over IPv6" in net.peer_ce("read", "--session-file", session).stdout
    finally:
        move(overlay.room_address)
    net.peer_ce("join", "--address", overlay.room_address)
    assert "over IPv6" in net.peer_ce("read").stdout
    step(f"the room moved to {overlay.room_address6}: ce read named {overlay.room_address}:{port} and what to ask; "
         f"ce join --address [{overlay.room_address6}]:{port} re-pointed the session; read, propose (approved), "
         "a new colleague joined over IPv6; moved back the same way")


def _listener_when(net: Net, listening: bool, within: float) -> tuple[dict[str, Any], float]:
    """The owner's view of the tailcat listener (``ce status --json``: room.transports) once it says
    ``listening``, and how long that took; AssertionError after ``within`` seconds."""
    started = time.monotonic()
    while True:
        status = _json(net.room_ce("status", str(net.document), "--json"))
        (listener,) = status["room"]["transports"]
        if listener["listening"] is listening:
            return listener, time.monotonic() - started
        assert time.monotonic() - started < within, f"still {listener} after {within} s"
        time.sleep(0.5)


def test_the_room_follows_its_overlay_address(net: Net) -> None:
    overlay = net.overlay
    address = ["ip", "-n", overlay.room_ns, "addr", "{}", f"{overlay.room_address}/24", "dev", overlay.room_wg]
    listener, _ = _listener_when(net, True, 1)
    assert listener == {"type": "tailcat", "address": overlay.room_address, "port": net.tailcat_port,
                        "interface": overlay.room_wg, "listening": True}
    subprocess.run([part.format("del") for part in address], check=True)
    try:
        listener, took = _listener_when(net, False, 10)
        shown = net.room_ce("status", str(net.document)).stdout
        assert f"the tailcat address {overlay.room_address} is gone" in shown, shown
        refused = net.room_ce("invite", str(net.document), "-p", "bob", "--transport", "tailcat", check=False)
        assert refused.returncode == EXIT_CODES["transport_unavailable"], refused.stderr
        assert "is gone from this machine" in refused.stderr, refused.stderr
        log = net.document.with_name("doc.md.serve.log").read_text()
        assert f"the tailcat address {overlay.room_address} is gone" in log, log[-2000:]
    finally:
        subprocess.run([part.format("add") for part in address], check=True)
    _, back = _listener_when(net, True, 10)
    assert net.peer_ce("read").stdout.startswith("# Plan")
    log = net.document.with_name("doc.md.serve.log")
    seen = log.read_text().count("is back on")
    overlay.remake_room_tunnel()  # the interface made anew: the listener's old binding reaches nothing
    deadline = time.monotonic() + 10
    while log.read_text().count("is back on") == seen:
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    assert net.peer_ce("read").stdout.startswith("# Plan")  # bound to the new interface
    step(f"the room's address removed: noticed in {took:.1f} s (ce status, the log, tailcat invitations "
         f"transport_unavailable); put back: listening again in {back:.1f} s, the colleague reads; its interface "
         "made anew (wireguard-go restarted): bound to the new one, the colleague reads")


def test_revoked_session_refused(net: Net) -> None:
    token = net.room_ce("invite", str(net.document), "-p", "bob", "--cap", "read,observe", "--transport",
                        "tailcat").stdout.strip()
    session = str(net.peer_home / "to-revoke.json")
    session_id = _json(net.peer_ce("join", token, "--session-file", session, "--json"))["session"]["id"]
    assert net.peer_ce("read", "--session-file", session).stdout.startswith("# Plan")
    observer = Follower(net.peer_command(ce_path(), "observe", "--json", "--session-file", session))
    try:
        observer.wait(lambda line: False, 1.0)  # connected and idle
        net.room_ce("revoke", str(net.document), "--session", session_id)
        assert observer.proc.wait(20) == EXIT_CODES["unauthorized"]
    finally:
        observer.stop()
    said = "".join(observer.errors())
    assert "your session was revoked" in said and "went away" not in said, said
    refused = net.peer_ce("read", "--session-file", session, "--json", check=False)
    assert refused.returncode == EXIT_CODES["unauthorized"], refused.stdout + refused.stderr
    assert json.loads(refused.stderr)["error"] == "unauthorized"
    step(f"session {session_id} revoked on the room's side; ce observe there said \"your session was revoked\", "
         "ce read: unauthorized")


class Follower:
    """A long-running command's stdout JSON lines and stderr, read by threads."""

    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self._errors: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=lambda: self._errors.extend(iter(self.proc.stderr.readline, "")),  # type: ignore[union-attr]
                         daemon=True).start()

    def _read_out(self) -> None:
        for line in iter(self.proc.stdout.readline, ""):  # type: ignore[union-attr]
            if line.strip():
                self.lines.put(json.loads(line))

    def errors(self) -> list[str]:
        return list(self._errors)

    def wait(self, matches: Any, timeout: float = 15.0) -> Any:
        """The first event that ``matches``; None when ``matches`` never does within a short idle wait."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if timeout <= 1.0:
                    return None
                raise AssertionError(f"no matching event in {timeout} s; stderr: {self.errors()}")
            try:
                event = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if matches(event):
                return event

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def test_ssh_local_forward_carries_a_loopback_invitation_unchanged(net: Net) -> None:
    """The other way in: ``ssh -N -L PORT:127.0.0.1:PORT host`` over the plain LAN, no tunnel, no plugin."""
    ensure_ssh()
    port = int(net.room.state["ingress"]["port"])
    forward = SshForward(net.overlay, net.folder.parent / "ssh").start(port, net.peer_home,
                                                                      (net.folder, net.room_home))
    try:
        token = net.room_ce("invite", str(net.document), "-p", "carol", "--cap", "read").stdout.strip()
        assert invitation.decode(token)["transport"]["type"] == "loopback"
        session = str(net.peer_home / "carol.json")
        net.peer_ce("join", token, "--session-file", session)
        assert "line one" in net.peer_ce("read", "--session-file", session).stdout
    finally:
        forward.stop()
    print(f"  over SSH: ssh -N -L {port}:127.0.0.1:{port} root@{net.overlay.room_lan}; "
          "the loopback invitation joined and read unchanged")
