"""Two machines on one host: network namespaces, a veth pair, a userspace WireGuard tunnel.

:class:`Overlay` makes two network namespaces (``room`` and ``peer``)
joined by a veth pair (the "LAN", 192.168.213.0/30) and a WireGuard tunnel
over it (10.213.0.1 ↔ 10.213.0.2, and fd7a:115c:a1e0::1 ↔ ::2: an IPv6
overlay as Tailscale numbers it), run by Debian's ``wireguard-go`` in
userspace (``WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1``: no kernel
module needed) and configured with ``wg`` from ``wireguard-tools``; both
are installed with apt-get when missing (:func:`ensure_wireguard`, as
tests/chromium.py installs Chromium). :meth:`Overlay.down` tears it all
down by name (the namespaces, which take the veth with them) and by PID
(each ``wireguard-go``). :func:`cannot_make_namespaces` says why a test must
be skipped, only where a network namespace cannot be made at all.

:meth:`Overlay.peer` runs a command as "the other machine": in the peer
namespace, in its own mount namespace where each hidden folder (the room's)
is covered by an empty tmpfs, so it has no access to the room's files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.apt import ensure
from tests.roomproc import Room, ce_path

WG_ENV = {"WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD": "1"}
WG_PORT = 51820


def ensure_wireguard() -> None:
    """``wg`` and ``wireguard-go``, installed with apt-get first if missing (RuntimeError if they cannot be)."""
    ensure({"wireguard-tools": Path("/usr/bin/wg"), "wireguard-go": Path("/usr/bin/wireguard-go")},
           recommends=False)  # wireguard-tools recommends a kernel image


def _run(*command: str, input: str | None = None) -> str:
    done = subprocess.run(list(command), capture_output=True, text=True, input=input, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def cannot_make_namespaces() -> str | None:
    """Why no network namespace can be made here (not root, no ``ip``, a refusal), or None."""
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "iproute2's ip or util-linux's unshare is missing"
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"crprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun (wireguard-go needs a tun device)"
    return None


@dataclass
class Overlay:
    """Two namespaces and a WireGuard tunnel between them (``up()`` / ``down()``)."""

    keys: Path  # a private folder for the two private keys
    tag: str = field(default_factory=lambda: f"cr{os.getpid() % 100000}")
    room_address: str = "10.213.0.1"
    peer_address: str = "10.213.0.2"
    room_address6: str = "fd7a:115c:a1e0::1"  # Tailscale's IPv6 range
    peer_address6: str = "fd7a:115c:a1e0::2"
    room_lan: str = "192.168.213.1"
    peer_lan: str = "192.168.213.2"
    pids: list[int] = field(default_factory=list)
    public: dict[str, str] = field(default_factory=dict)  # each interface's public key

    @property
    def room_ns(self) -> str:
        return f"{self.tag}room"

    @property
    def peer_ns(self) -> str:
        return f"{self.tag}peer"

    @property
    def room_wg(self) -> str:
        return f"{self.tag}wgr"  # interface names: at most 15 bytes

    @property
    def peer_wg(self) -> str:
        return f"{self.tag}wgp"

    def up(self) -> "Overlay":
        """Make the namespaces, the veth pair and the tunnel; wait for both UAPI sockets."""
        self.keys.mkdir(mode=0o700, parents=True, exist_ok=True)
        for ns in (self.room_ns, self.peer_ns):
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "link", "add", f"{self.tag}vr", "netns", self.room_ns, "type", "veth",
             "peer", "name", f"{self.tag}vp", "netns", self.peer_ns)
        sides = [(self.room_ns, f"{self.tag}vr", self.room_lan, self.room_wg, self.room_address),
                 (self.peer_ns, f"{self.tag}vp", self.peer_lan, self.peer_wg, self.peer_address)]
        for ns, veth, lan, _wg, _address in sides:
            _run("ip", "-n", ns, "addr", "add", f"{lan}/30", "dev", veth)
            _run("ip", "-n", ns, "link", "set", veth, "up")
        public = {}
        for ns, _veth, _lan, wg, _address in sides:
            private = _run("wg", "genkey").strip()
            (self.keys / wg).write_text(private + "\n")
            (self.keys / wg).chmod(0o600)
            public[wg] = _run("wg", "pubkey", input=private + "\n").strip()
            proc = subprocess.Popen(["ip", "netns", "exec", ns, "wireguard-go", "-f", wg],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env={**os.environ, **WG_ENV}, start_new_session=True)
            self.pids.append(proc.pid)  # ip netns exec execs wireguard-go: the same PID
        deadline = time.monotonic() + 10
        while not all(Path(f"/var/run/wireguard/{wg}.sock").exists() for wg in (self.room_wg, self.peer_wg)):
            if time.monotonic() > deadline:
                raise RuntimeError("wireguard-go did not open its UAPI sockets in 10 s")
            time.sleep(0.02)
        self.public = public
        for ns in (self.room_ns, self.peer_ns):
            self._configure(ns)
        return self

    def _configure(self, ns: str) -> None:
        """One side's WireGuard interface: its key, the other side as its peer, its addresses, up."""
        room = ns == self.room_ns
        wg, other_wg = (self.room_wg, self.peer_wg) if room else (self.peer_wg, self.room_wg)
        other_address, other6, other_lan = ((self.peer_address, self.peer_address6, self.peer_lan) if room
                                            else (self.room_address, self.room_address6, self.room_lan))
        _run("ip", "netns", "exec", ns, "wg", "set", wg, "private-key", str(self.keys / wg),
             "listen-port", str(WG_PORT), "peer", self.public[other_wg], "allowed-ips",
             f"{other_address}/32,{other6}/128", "endpoint", f"{other_lan}:{WG_PORT}")
        _run("ip", "-n", ns, "addr", "add", f"{self.room_address if room else self.peer_address}/24", "dev", wg)
        own6 = self.room_address6 if room else self.peer_address6
        _run("ip", "-n", ns, "-6", "addr", "add", f"{own6}/48", "dev", wg, "nodad")
        _run("ip", "-n", ns, "link", "set", wg, "up")

    def remake_room_tunnel(self) -> None:
        """Stop the room side's wireguard-go (its interface goes) and start a new one: the same name, key and
        addresses on an interface made anew (another index), as tailscaled does when it restarts."""
        old = self.pids[0]
        os.kill(old, 15)
        deadline = time.monotonic() + 10
        try:
            while not os.waitpid(old, os.WNOHANG)[0] and time.monotonic() < deadline:
                time.sleep(0.02)
        except ChildProcessError:  # reaped already
            pass
        while subprocess.run(["ip", "-n", self.room_ns, "link", "show", self.room_wg], capture_output=True).returncode == 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.room_wg} is still there 10 s after its wireguard-go stopped")
            time.sleep(0.02)
        Path(f"/var/run/wireguard/{self.room_wg}.sock").unlink(missing_ok=True)
        proc = subprocess.Popen(["ip", "netns", "exec", self.room_ns, "wireguard-go", "-f", self.room_wg],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, **WG_ENV}, start_new_session=True)
        self.pids[0] = proc.pid
        while not Path(f"/var/run/wireguard/{self.room_wg}.sock").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("wireguard-go did not open its UAPI socket in 10 s")
            time.sleep(0.02)
        self._configure(self.room_ns)
        # the peer still holds the old session's keys: the room side shakes hands first (any packet to the peer)
        nudge = f"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('{self.peer_address}', 9))"
        while True:
            subprocess.run(self.room(sys.executable, "-c", nudge), capture_output=True)
            shaken = _run("ip", "netns", "exec", self.room_ns, "wg", "show", self.room_wg, "latest-handshakes")
            if any(line.split()[-1] != "0" for line in shaken.splitlines() if line.strip()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the new room side of the tunnel made no handshake in 10 s")
            time.sleep(0.1)

    def down(self) -> None:
        """Stop each wireguard-go by PID, delete both namespaces by name (the veth goes with them)."""
        for pid in self.pids:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                continue
        for pid in self.pids:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.02)
            else:
                os.kill(pid, 9)
        for ns in (self.room_ns, self.peer_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        for wg in (self.room_wg, self.peer_wg):
            Path(f"/var/run/wireguard/{wg}.sock").unlink(missing_ok=True)

    def hosts(self, ns: str, names: dict[str, str]) -> None:
        """``/etc/hosts`` of namespace ``ns`` (``ip netns exec`` mounts ``/etc/netns/NS/hosts`` over it): name → address."""
        folder = Path(f"/etc/netns/{ns}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hosts").write_text("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in names.items()))

    def room(self, *command: str) -> list[str]:
        """``command`` run on the room's machine (its namespace)."""
        return ["ip", "netns", "exec", self.room_ns, *command]

    def peer(self, *command: str, hide: tuple[Path, ...] = ()) -> list[str]:
        """``command`` run on the other machine: its namespace, each folder of ``hide`` an empty tmpfs."""
        mounts = "".join(f'mount -t tmpfs -o size=1m,mode=0700 hidden "{folder}" && ' for folder in hide)
        return ["ip", "netns", "exec", self.peer_ns, "unshare", "--mount", "--propagation", "private",
                "sh", "-c", mounts + 'exec "$@"', "sh", *command]


def ensure_ssh() -> None:
    """``sshd`` and ``ssh``, installed with apt-get first if missing (RuntimeError if they cannot be)."""
    ensure({"openssh-server": Path("/usr/sbin/sshd"), "openssh-client": Path("/usr/bin/ssh")}, recommends=False)


@dataclass
class SshForward:
    """An ``sshd`` in the room's namespace on its LAN address and ``ssh -N -L PORT:127.0.0.1:PORT`` from the peer.

    Keys, ``sshd_config`` and ``known_hosts`` live in ``folder`` (the
    client's key there too, so the peer must see it: not a hidden folder).
    :meth:`stop` ends both by PID.
    """

    overlay: Overlay
    folder: Path
    sshd_port: int = 2222
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, port: int, home: Path, hide: tuple[Path, ...]) -> "SshForward":
        """Forward the peer's 127.0.0.1:``port`` to the room machine's 127.0.0.1:``port``; wait until it answers."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        host_key, user_key = self.folder / "host_ed25519", self.folder / "user_ed25519"
        for key in (host_key, user_key):
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        (self.folder / "authorized_keys").write_text(Path(f"{user_key}.pub").read_text())
        config = self.folder / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress {self.overlay.room_lan}:{self.sshd_port}", f"HostKey {host_key}",
            f"AuthorizedKeysFile {self.folder}/authorized_keys", f"PidFile {self.folder}/sshd.pid",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "AllowTcpForwarding local", "X11Forwarding no", ""]))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self.procs.append(subprocess.Popen(self.overlay.room("/usr/sbin/sshd", "-D", "-e", "-f", str(config)),
                                           stdout=subprocess.DEVNULL, stderr=open(self.folder / "sshd.log", "ab"),
                                           start_new_session=True))
        ssh = ["ssh", "-N", "-i", str(user_key), "-p", str(self.sshd_port), "-o", "BatchMode=yes",
               "-o", f"UserKnownHostsFile={self.folder}/known_hosts", "-o", "StrictHostKeyChecking=accept-new",
               "-o", "ExitOnForwardFailure=yes", "-L", f"{port}:127.0.0.1:{port}", f"root@{self.overlay.room_lan}"]
        deadline = time.monotonic() + 20
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1).close()"
        while True:
            if not self.procs[1:] or self.procs[-1].poll() is not None:  # (re)start ssh until sshd listens
                self.procs[1:] = [subprocess.Popen(self.overlay.peer("env", f"HOME={home}", *ssh, hide=hide),
                                                   stdout=subprocess.DEVNULL,
                                                   stderr=open(self.folder / "ssh.log", "ab"),
                                                   start_new_session=True)]
            # the forward listens once ssh is authenticated; before that the peer's port refuses
            if subprocess.run(self.overlay.peer(sys.executable, "-c", probe), capture_output=True).returncode == 0:
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(f"the SSH forward did not come up: {(self.folder / 'ssh.log').read_text()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """End ssh and sshd by PID."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


def serve_tailcat(overlay: Overlay, document: Path, ports: tuple[str, str, str] = ("0", "0", "0"),
                  env: dict[str, str] | None = None, args: tuple[str, ...] = (),
                  address: str | None = None) -> Room:
    """``ce serve DOCUMENT --transport tailcat --address <room's overlay address>`` in the room's namespace.

    ``ports``: ``--port``, ``--owner-port``, ``--transport-port`` (``"0"``:
    free ones); ``args``: more options; ``address``: another overlay address
    of the room's namespace. Returns once the state file is written (the listeners are
    bound then: connections wait in their backlog until the worker is up).
    The room's output goes to ``<document>.serve.log``.
    """
    state_file = document.with_name(document.name + ".commonroom.json")
    log_file = document.with_name(document.name + ".serve.log")
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(overlay.room(
            ce_path(), "serve", str(document), "--port", ports[0], "--owner-port", ports[1],
            "--transport", "tailcat", "--address", address or overlay.room_address, "--transport-port", ports[2],
            *args),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 30
    while not state_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"ce serve did not start: {log_file.read_text()}")
        time.sleep(0.05)
    return Room(document, proc, json.loads(state_file.read_text()))
