"""``ce serve --transport tailcat`` refusals and the plugin's registration, without root or a tunnel.

The end-to-end test over a real WireGuard tunnel is tests/e2e/test_tailcat_overlay.py;
this one runs anywhere: each address that is not on a WireGuard or Tailscale
interface of this machine is refused with one line, ``transport_unavailable``
(exit 23), and no room starts (no state file, no sidecar, the lock free).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from commonroom import schemas, tailcat
from commonroom.errors import EXIT_CODES, TransportUnavailable
from commonroom.roomfiles import RoomFiles
from commonroom.transport import check_listener
from commonroom.transport_hints import hint, plugin
from tests.roomproc import ce


def lan_address() -> str | None:
    """An address of this machine on an interface that is not loopback and not an overlay (eth0, …)."""
    for interface in tailcat.interfaces():
        for address in interface.addresses:
            ip = ipaddress.ip_address(address)
            if interface.overlay is None and not ip.is_loopback and not ip.is_link_local:
                return address
    return None


def refused(tmp_path: Path, *args: str) -> str:
    """``ce serve doc.md --transport tailcat ARGS``: its one stderr line, after checking nothing started."""
    document = tmp_path / "doc.md"
    document.write_text("# Doc\n")
    done = ce("serve", str(document), "--port", "0", "--owner-port", "0", "--transport", "tailcat", *args,
              timeout=30)
    assert done.returncode == EXIT_CODES["transport_unavailable"], done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ce serve: transport_unavailable: "), done.stderr
    assert done.stdout == ""
    files = RoomFiles.of(document)
    assert not files.state.exists() and not files.sidecar.exists()
    fd = files.try_lock()
    assert fd is not None  # the writer lock is free
    os.close(fd)
    return lines[0]


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "0.0.0.0", "::", "224.0.0.1"])
def test_loopback_wildcard_multicast_refused(tmp_path: Path, address: str) -> None:
    assert address in refused(tmp_path, "--address", address)


def test_lan_interface_refused(tmp_path: Path) -> None:
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no address outside loopback")
    line = refused(tmp_path, "--address", address)
    assert "not a WireGuard or Tailscale interface" in line


def test_address_not_here_or_not_an_ip_refused(tmp_path: Path) -> None:
    assert "no interface of this machine has it" in refused(tmp_path, "--address", "198.51.100.77")
    assert "must listen on an IP address" in refused(tmp_path, "--address", "example.com")


def test_no_address_without_tailscale_refused(tmp_path: Path) -> None:
    if shutil.which("tailscale"):
        pytest.skip("a tailscale command is installed here: it would be asked for the address")
    assert "--address" in refused(tmp_path)


def test_plugin_options_need_a_plugin(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n")
    done = ce("serve", str(tmp_path / "doc.md"), "--address", "10.0.0.1", timeout=30)
    assert done.returncode == 2 and "add --transport NAME" in done.stderr
    done = ce("serve", str(tmp_path / "doc.md"), "--transport", "loopback", timeout=30)
    assert done.returncode == 2 and "built in, not a plugin" in done.stderr


def test_registered_through_the_entry_point_group() -> None:
    found = [ep for ep in entry_points(group="commonroom.transports") if ep.name == "tailcat"]
    assert [ep.value for ep in found] == ["commonroom.tailcat:plugin"]
    assert plugin("tailcat") is tailcat.plugin
    with pytest.raises(TransportUnavailable) as caught:
        plugin("carrier-pigeon")
    assert "tailcat" in caught.value.details["installed"]


def test_hint_shape_and_no_listener() -> None:
    made = hint("tailcat", {"host": "127.0.0.1", "port": 7711,
                            "transports": {"tailcat": {"address": "10.8.0.1", "port": 7711}}})
    assert made == {"type": "tailcat", "address": "10.8.0.1", "port": 7711, "encrypted": True, "mode": "private"}
    assert schemas.errors_of("transport", made) == []
    with pytest.raises(TransportUnavailable) as caught:
        hint("tailcat", {"host": "127.0.0.1", "port": 7711})
    assert "--transport tailcat" in str(caught.value)


@pytest.mark.parametrize("address", ["127.0.0.1", "0.0.0.0", "::", "ff02::1", "host.example"])
def test_the_room_refuses_any_plugin_listener_there(address: str) -> None:
    with pytest.raises(TransportUnavailable):
        check_listener("any", address, 7711)


def test_dial_refuses_a_hint_not_routed_through_an_overlay() -> None:
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no address outside loopback")
    with pytest.raises(TransportUnavailable) as caught:
        tailcat.plugin.dial({"type": "tailcat", "address": address, "port": 7711, "encrypted": True,
                             "mode": "private"}, 2.0)
    assert "not reached through a WireGuard or Tailscale interface" in str(caught.value)


FAKE_PLUGINS = '''"""Two transport plugins that break the listen contract (tests/e2e/test_tailcat_serve.py)."""


class TwoItems:
    def listen(self, address, port):
        return "192.0.2.1", port  # no interface name


class NoSuchDevice:
    def listen(self, address, port):
        return "192.0.2.1", port, "nosuchif0"


two_items, no_such_device = TwoItems(), NoSuchDevice()
'''


@pytest.mark.parametrize(("name", "said"), [("twoitems", "named no network interface"),
                                            ("nosuchdevice", "cannot bind the nosuchdevice listener to interface "
                                                             "nosuchif0")])
def test_every_plugin_listener_is_bound_to_an_interface(tmp_path: Path, name: str, said: str) -> None:
    """A plugin whose ``listen`` names no interface, or one that does not exist, starts no room."""
    site = tmp_path / "site"
    (site / "fake_transports-0.dist-info").mkdir(parents=True)
    (site / "fake_transports.py").write_text(FAKE_PLUGINS)
    (site / "fake_transports-0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-transports\n"
                                                                   "Version: 0\n")
    (site / "fake_transports-0.dist-info" / "entry_points.txt").write_text(
        "[commonroom.transports]\ntwoitems = fake_transports:two_items\n"
        "nosuchdevice = fake_transports:no_such_device\n")
    document = tmp_path / "doc.md"
    document.write_text("# Doc\n")
    done = ce("serve", str(document), "--port", "0", "--owner-port", "0", "--transport", name,
              env={"PYTHONPATH": str(site)}, timeout=30)
    assert done.returncode == EXIT_CODES["transport_unavailable"], done.stdout + done.stderr
    assert done.stderr.startswith("ce serve: transport_unavailable: ") and said in done.stderr, done.stderr
    assert not RoomFiles.of(document).state.exists()
