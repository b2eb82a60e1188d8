"""A GDB Remote Serial Protocol client (drives QEMU's gdbstub, and equally OpenOCD or pyOCD GDB servers).

Only what a session needs: memory (``m``/``M``, chunked to the server's packet size), registers (``p``/``P``,
numbered from the target description ``qXfer:features:read:target.xml``), breakpoints (``Z0``/``Z1``), continue,
stop replies and an interrupt (0x03) when a program outruns its timeout. Every socket read has a deadline.

GDB servers count no instructions (QEMU's DWT cycle counter reads 0), so costs are reported as unknown (None):
through QEMU what matters is that results are byte-identical to the emulator's.

Two instruction sets: on a Cortex-M (``arch="arm"``) faults end in a handler of the vector table that VTOR points
at, decoded from the SCB's fault status registers; on RISC-V (``arch="riscv"``) every trap enters at the address in
the ``mtvec`` CSR (set by the runtime's ``mn_init``) and is decoded from ``mcause``, ``mepc`` and ``mtval``, which
QEMU's target description lists with the core registers.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import time

from micronn.micro.device import DeviceFault, ExecResult, LowLevelDevice
from micronn.micro.target import RV_CAUSES, RV_REGS, Target, get_target

_SCB = 0xE000ED00  # System Control Block: VTOR +0x08, CFSR +0x28, HFSR +0x2C, DFSR +0x30, MMFAR +0x34, BFAR +0x38
_CFSR_BITS = {0: "instruction access violation", 1: "data access violation", 8: "instruction bus error",
              9: "precise data bus error", 10: "imprecise data bus error", 12: "stacking bus error",
              16: "undefined instruction", 17: "invalid state (Thumb bit clear)", 18: "invalid exception return",
              19: "no coprocessor", 24: "unaligned access", 25: "division by zero"}


class GdbError(DeviceFault):
    """The GDB server misbehaved: closed the connection, timed out, or answered with an error."""


class _Timeout(GdbError):
    pass


class GdbDevice(LowLevelDevice):
    """A device behind a GDB server at ``host:port``. ``reset_command`` is the monitor command that resets the
    core (QEMU: ``system_reset``; OpenOCD: ``reset halt``); ``stack_top`` the initial stack pointer of every
    execute (None: leave SP as it is); ``arch`` the core's instruction set, "arm" (Cortex-M) or "riscv" (RV32)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 1234, *, timeout_s: float = 10.0,
                 reset_command: str = "system_reset", connect_timeout_s: float = 10.0, stack_top: int | None = None,
                 arch: str = "arm"):
        if arch not in ("arm", "riscv"):
            raise GdbError(f"unknown instruction set {arch!r}: arm or riscv")
        self.timeout_s, self.reset_command, self.stack_top, self.arch = timeout_s, reset_command, stack_top, arch
        deadline = time.monotonic() + connect_timeout_s
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=timeout_s)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # many tiny packets: no Nagle
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    raise GdbError(f"cannot connect to a GDB server at {host}:{port}: {e}") from e
                time.sleep(0.05)
        self._buf, self._ack = b"", True
        feats = self.command(f"qSupported:swbreak+;hwbreak+;xmlRegisters={arch}").split(";")
        size = next((f.split("=")[1] for f in feats if f.startswith("PacketSize=")), "400")
        self.packet_size = int(size, 16)
        if "QStartNoAckMode+" in feats and self.command("QStartNoAckMode") == "OK":
            self._ack = False
        if "qXfer:features:read+" in feats:
            self.regs = self._registers()
        elif arch == "riscv":  # the RISC-V numbering of GDB: x0-x31, then pc
            self.regs = {name: i + 1 for i, name in enumerate(RV_REGS[:-1])} | {"pc": 32}
        else:
            self.regs = {f"r{i}": i for i in range(13)} | {"sp": 13, "lr": 14, "pc": 15, "xpsr": 25}
        self.command("?")

    # -- packets --------------------------------------------------------------------------------
    def _recv(self, deadline: float) -> bytes:
        while True:
            start = self._buf.find(b"$")
            end = self._buf.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self._buf) >= end + 3:
                body, cs = self._buf[start + 1:end], self._buf[end + 1:end + 3]
                self._buf = self._buf[end + 3:]
                if int(cs, 16) != sum(body) & 0xFF:
                    if self._ack:
                        self.sock.sendall(b"-")
                    continue
                if self._ack:
                    self.sock.sendall(b"+")
                return _decode(body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise GdbError("the GDB server closed the connection")
            self._buf += chunk

    def _send(self, data: bytes) -> None:
        esc = re.sub(rb"[#$}*]", lambda m: b"}" + bytes([m.group()[0] ^ 0x20]), data)
        self.sock.sendall(b"$" + esc + b"#%02x" % (sum(esc) & 0xFF))

    def command(self, cmd: str | bytes, timeout_s: float | None = None) -> str:
        """Send one packet and return the reply (console output packets 'O...' skipped)."""
        t = timeout_s or self.timeout_s
        deadline = time.monotonic() + t
        try:
            self._send(cmd.encode() if isinstance(cmd, str) else cmd)
            while True:
                reply = self._recv(deadline).decode("latin-1")
                if not reply.startswith("O") or reply == "OK":
                    return reply
        except TimeoutError as e:
            raise _Timeout(f"no reply from the GDB server to {str(cmd)[:40]!r} within {t} s") from e
        except OSError as e:
            raise GdbError(f"GDB connection failed: {e}") from e

    def _ok(self, cmd: str) -> str:
        r = self.command(cmd)
        if r.startswith("E") and len(r) == 3:
            raise GdbError(f"GDB server refused {cmd[:40]!r}: {r}")
        return r

    def _xfer(self, annex: str) -> str:
        out, off = "", 0
        while True:
            r = self.command(f"qXfer:features:read:{annex}:{off:x},{self.packet_size - 16:x}")
            if not r or r[0] not in "lm":
                raise GdbError(f"cannot read the target description {annex}: {r!r}")
            out += r[1:]
            off += len(r) - 1
            if r[0] == "l":
                return out

    def _registers(self) -> dict[str, int]:
        """Register numbers from the target description (its includes in order; ``regnum`` restarts counting)."""
        regs: dict[str, int] = {}
        n = 0

        def walk(annex: str) -> None:
            nonlocal n
            xml = self._xfer(annex)
            for m in re.finditer(r'<xi:include\s+href="([^"]+)"|<reg\s([^>]*)>', xml):
                if m.group(1):
                    walk(m.group(1))
                    continue
                attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                n = int(attrs.get("regnum", n))
                regs[attrs["name"].lower()] = n
                n += 1

        walk("target.xml")
        if "fp" in regs and "s0" not in regs:  # RISC-V's x8 under its other ABI name
            regs["s0"] = regs["fp"]
        if "pc" not in regs:
            raise GdbError("the target description names no pc register")
        return regs

    # -- LowLevelDevice -------------------------------------------------------------------------
    def read(self, addr: int, n: int) -> bytes:
        out = bytearray()
        step = max(16, (self.packet_size - 8) // 2)
        while len(out) < n:
            k = min(step, n - len(out))
            r = self._ok(f"m{addr + len(out):x},{k:x}")
            if len(r) != 2 * k:
                raise DeviceFault(f"read of {k} bytes failed: {r[:20]!r}", address=addr + len(out))
            out += bytes.fromhex(r)
        return bytes(out)

    def write(self, addr: int, data: bytes) -> None:
        step = max(16, (self.packet_size - 32) // 2)
        for i in range(0, len(data), step):
            r = self.command(f"M{addr + i:x},{len(data[i:i + step]):x}:{data[i:i + step].hex()}")
            if r != "OK":
                raise DeviceFault(f"write of {len(data[i:i + step])} bytes failed: {r!r}", address=addr + i)

    def reg(self, name: str) -> int:
        r = self._ok(f"p{self.regs[name]:x}")
        return int.from_bytes(bytes.fromhex(r), "little")

    def set_reg(self, name: str, value: int) -> None:
        if self._ok(f"P{self.regs[name]:x}={(value & 0xFFFFFFFF).to_bytes(4, 'little').hex()}") != "OK":
            raise GdbError(f"cannot set register {name}")

    def registers(self) -> dict[str, int]:
        names = RV_REGS if self.arch == "riscv" else [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "xpsr"]
        return {k: self.reg(k) for k in names if k in self.regs}

    def _word(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 4), "little")

    def _breakpoint(self, addr: int, insert: bool) -> None:
        for kind in "01":  # software, then hardware (code in flash)
            r = self.command(f"{'Z' if insert else 'z'}{kind},{addr:x},2")
            if r == "OK":
                return
        if insert:
            raise GdbError(f"the GDB server sets no breakpoint at 0x{addr:x}")

    def execute(self, func_addr: int, stop_addr: int, *, max_instructions: int | None = None,
                timeout_s: float | None = None, marks: tuple[int, ...] = ()) -> ExecResult:
        """Run to ``stop_addr``; a stop in a fault handler of the vector table is decoded into a DeviceFault.
        ``max_instructions`` cannot be enforced over GDB (only ``timeout_s``)."""
        stop = stop_addr & ~1
        riscv = self.arch == "riscv"
        if riscv:  # direct mode: every trap enters at mtvec (its low two bits are the mode)
            handlers = {self.reg("mtvec") & ~3} - {0, stop} if "mtvec" in self.regs else set()
        else:
            vtor = self._word(_SCB + 8)
            handlers = {int.from_bytes(v, "little") & ~1 for v in _words(self.read(vtor + 8, 56))} - {0, stop}
        if self.stack_top is not None:
            self.set_reg("sp", self.stack_top)
        if riscv:
            self.set_reg("ra", stop)
            self.set_reg("pc", func_addr)
        else:
            self.set_reg("lr", stop_addr | 1)
            self.set_reg("pc", func_addr & ~1)
            self.set_reg("xpsr", 1 << 24)  # Thumb state, thread mode
        for a in [stop, *handlers]:
            self._breakpoint(a, True)
        t0 = time.monotonic()
        try:
            reply = self.command("c", timeout_s or 1e9)
        except _Timeout:
            self.sock.sendall(b"\x03")  # interrupt the runaway program
            try:
                self._recv(time.monotonic() + self.timeout_s)
            except TimeoutError:
                raise GdbError("the target did not stop after an interrupt") from None
            reply = None
        wall = time.monotonic() - t0
        for a in [stop, *handlers]:
            self._breakpoint(a, False)
        if reply is None:
            raise DeviceFault(f"timeout after {timeout_s} s", self.reg("pc"), self.registers())
        if reply[:1] in ("W", "X"):
            raise GdbError(f"the target exited ({reply})")
        pc = self.reg("pc")
        if pc == stop:
            return ExecResult(wall_s=wall)
        regs = self.registers()
        if pc in handlers and riscv:
            cause, epc, tval = self.reg("mcause"), self.reg("mepc"), self.reg("mtval")
            regs["pc"] = epc
            addr = tval if cause in (0, 1, 4, 5, 6, 7) else None
            raise DeviceFault(f"trap: {RV_CAUSES.get(cause, 'unknown cause')} (mcause=0x{cause:x}, "
                              f"mtval=0x{tval:x})", epc, regs, addr)
        if pc in handlers:
            sp = regs["sp"]
            frame = [self._word(sp + 4 * i) for i in range(8)]  # exception frame: r0-r3, r12, lr, pc, xpsr
            regs.update(zip(["r0", "r1", "r2", "r3", "r12", "lr", "pc", "xpsr"], frame))
            cfsr, hfsr = self._word(_SCB + 0x28), self._word(_SCB + 0x2C)
            why = [t for b, t in _CFSR_BITS.items() if cfsr >> b & 1]
            if self._word(_SCB + 0x30) & 2 or self.read(frame[6] & ~1, 2)[1] == 0xBE:  # DFSR.BKPT or a BKPT
                why.append("breakpoint instruction (BKPT)")  # at the stacked pc: escalated to HardFault
            addr = self._word(_SCB + 0x38) if cfsr >> 15 & 1 else self._word(_SCB + 0x34) if cfsr >> 7 & 1 else None
            raise DeviceFault(f"HardFault: {', '.join(why) or 'unknown cause'} (CFSR=0x{cfsr:08x}, "
                              f"HFSR=0x{hfsr:08x})", frame[6], regs, addr)
        raise DeviceFault(f"stopped unexpectedly ({reply})", pc, regs)

    def reset(self) -> None:
        self.command("qRcmd," + self.reset_command.encode().hex(), 30)

    def close(self) -> None:
        sock, self.sock = getattr(self, "sock", None), None
        if sock is not None:
            try:
                sock.sendall(b"$D#44")  # detach
            except OSError:
                pass
            sock.close()


def _words(b: bytes) -> list[bytes]:
    return [b[i:i + 4] for i in range(0, len(b), 4)]


def _decode(body: bytes) -> bytes:
    """Undo the RSP's escapes (``}`` x^0x20) and run-length encoding (``*``)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == 0x7D:
            i += 1
            out.append(body[i] ^ 0x20)
        elif c == 0x2A and out:
            out += out[-1:] * (body[i + 1] - 29)
            i += 1
        else:
            out.append(c)
        i += 1
    return bytes(out)


def qemu_available(target: str | Target | None = None) -> bool:
    """Whether the QEMU system emulator of ``target``'s instruction set (default: Arm's) is on PATH."""
    return shutil.which(get_target(target).qemu_binary if target is not None else "qemu-system-arm") is not None


class QemuDevice(GdbDevice):
    """``target`` emulated by ``qemu-system-arm`` (Cortex-M) or ``qemu-system-riscv32`` (RV32, the ``virt`` board,
    with no firmware: ``-bios none``) and driven over its gdbstub (a free local port); the process is killed on
    close. ``-icount shift=0`` makes virtual time follow instructions (deterministic runs)."""

    def __init__(self, target: str | Target = "cortex-m4", *, timeout_s: float = 10.0):
        self.target = get_target(target)
        if self.target.qemu is None:
            hint = "; riscv32-qemu is the RISC-V preset for QEMU's virt board" if self.target.arch == "riscv" else ""
            raise DeviceFault(f"target {self.target.name} has no QEMU machine{hint}")
        binary = self.target.qemu_binary
        if not qemu_available(self.target):
            package = "qemu-system-misc" if self.target.arch == "riscv" else "qemu-system-arm"
            raise DeviceFault(f"{binary} is not installed (apt-get install {package})")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        machine, cpu = self.target.qemu
        self._log = tempfile.TemporaryFile()
        firmware = ["-bios", "none"] if self.target.arch == "riscv" else []  # else OpenSBI would take DRAM's start
        self.proc = subprocess.Popen(
            [binary, "-M", machine, "-cpu", cpu, *firmware, "-nographic", "-monitor", "none", "-serial", "null",
             "-S", "-gdb", f"tcp:127.0.0.1:{port}", "-icount", "shift=0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log)
        try:
            super().__init__("127.0.0.1", port, timeout_s=timeout_s, stack_top=self.target.stack_top,
                             arch=self.target.arch)
        except BaseException as e:
            err = self._stderr()
            self.close()
            raise DeviceFault(f"QEMU ({machine}) did not start: {err or e}") from e

    def _stderr(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace").strip()

    def close(self) -> None:
        super().close()
        proc, self.proc = getattr(self, "proc", None), None
        if proc is not None:
            proc.kill()
            proc.wait(10)
            self._log.close()
