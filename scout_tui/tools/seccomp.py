"""The seccomp filter bwrap loads into the sandbox (``--seccomp FD``): a command cannot open a new
unix-domain socket, so it cannot connect to any socket of the host, whatever its path.

The program is classic BPF, assembled here by hand rather than with libseccomp. Sources:
seccomp(2) (``struct seccomp_data``, return actions, checking ``arch`` first);
include/uapi/linux/filter.h and bpf_common.h (``struct sock_filter``: u16 code, u8 jt, u8 jf,
u32 k; the opcode bits); include/uapi/linux/seccomp.h (``SECCOMP_RET_ALLOW``,
``SECCOMP_RET_ERRNO``); include/uapi/linux/audit.h and elf-em.h (the ``AUDIT_ARCH_*`` values);
the syscall tables arch/x86/entry/syscalls/syscall_{64,32}.tbl, arch/arm/tools/syscall.tbl and
include/uapi/asm-generic/unistd.h (the numbers); socket(2) for EACCES; io_uring_setup(2).
"""

from __future__ import annotations

import errno
import platform
import struct
import sys
from dataclasses import dataclass

# seccomp_data (linux/seccomp.h): int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
# Loads are 32-bit; on a little-endian machine an argument's low half is at its own offset.
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24

# Opcodes (linux/bpf_common.h): BPF_LD|BPF_W|BPF_ABS, BPF_ALU|BPF_AND|BPF_K,
# BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
LD_ABS, AND, JEQ, RET = 0x20, 0x54, 0x15, 0x06

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000  # | errno, returned to the caller as -1 and errno
AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC (linux/net.h)
SYS_SOCKET, SYS_SOCKETPAIR = 1, 8  # socketcall's first argument (linux/net.h)
X32_SYSCALL_BIT = 0x40000000  # arch/x86/include/uapi/asm/unistd.h
IO_URING_SETUP = 425  # the same number on every architecture since Linux 5.1


@dataclass(frozen=True, slots=True)
class Abi:
    """One syscall ABI a process may use: its ``AUDIT_ARCH_*`` value and syscall numbers
    (``socketcall``: the multiplexer of 32-bit x86, None where there is none)."""

    arch: int
    socket: int
    socketpair: int
    socketcall: int | None = None


@dataclass(frozen=True, slots=True)
class Machine:
    """A machine the filter supports: its native ABI, the 32-bit ABI its kernel also runs, and
    whether x32 calls (native ``arch``, ``nr`` with ``X32_SYSCALL_BIT``) exist."""

    native: Abi
    compat: Abi
    x32: bool = False


MACHINES = {
    # AUDIT_ARCH_X86_64 = EM_X86_64 | 64BIT | LE; AUDIT_ARCH_I386 = EM_386 | LE.
    "x86_64": Machine(Abi(0xC000003E, socket=41, socketpair=53),
                      Abi(0x40000003, socket=359, socketpair=360, socketcall=102), x32=True),
    # AUDIT_ARCH_AARCH64 = EM_AARCH64 | 64BIT | LE; AUDIT_ARCH_ARM = EM_ARM | LE (EABI numbers).
    "aarch64": Machine(Abi(0xC00000B7, socket=198, socketpair=199), Abi(0x40000028, socket=281, socketpair=288)),
}
MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def machine_name() -> str:
    """This machine's name as ``MACHINES`` spells it ("x86_64", "aarch64", or another)."""
    name = platform.machine().lower()
    return MACHINE_ALIASES.get(name, name)


def program(machine: str | None = None) -> bytes | None:
    """The compiled filter for ``machine`` (default: this one), as the array of 8-byte
    ``struct sock_filter`` that bwrap's ``--seccomp`` reads; None for a machine not in
    ``MACHINES`` or a big-endian one (the argument offsets assume little-endian).

    What it does, for the native ABI and the 32-bit one alike (x32 calls are checked as native
    ones, their bit cleared):

    - ``socket(AF_UNIX, ...)`` fails with EACCES (socket(2): "Permission to create a socket of
      the specified type and/or protocol is denied"). Only the low 32 bits of the domain are
      compared: the kernel takes an ``int``, so higher bits cannot hide it. Other domains
      (AF_INET, AF_INET6, AF_NETLINK) are allowed: the network is cut by a namespace instead.
    - ``socketpair(AF_UNIX, SOCK_DGRAM)`` fails with EACCES, while stream and seqpacket pairs
      (asyncio's self-pipe, subprocess plumbing) work: a datagram socket of a pair can still
      ``sendto()`` (or ``connect()`` again to) any named or abstract socket of the host, while a
      stream socket of a pair stays connected to its twin (``connect()`` gives EISCONN).
    - ``socketcall(SYS_SOCKET | SYS_SOCKETPAIR, ...)`` of 32-bit x86 fails with EACCES for
      every domain: its arguments sit behind a pointer a filter cannot read. A 32-bit program
      that creates sockets that way gets none; it is not killed.
    - ``io_uring_setup`` fails with ENOSYS, as on a kernel without io_uring (programs fall back
      to plain syscalls): io_uring's IORING_OP_SOCKET and IORING_OP_CONNECT would bypass the
      filter, which sees syscalls only.
    - Any other ``arch`` (none exists on these kernels) gets ENOSYS for every call.
    - Everything else is allowed.
    """
    spec = MACHINES.get(machine or machine_name())
    if spec is None or sys.byteorder != "little":
        return None
    code: list[tuple[int, int | str, int | str, int]] = []  # (op, jt, jf, k); a jump may name a label
    labels: dict[str, int] = {}

    def op(code_: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        code.append((code_, jt, jf, k))

    def label(name: str) -> None:
        labels[name] = len(code)

    def dispatch(abi: Abi) -> None:
        op(JEQ, abi.socket, "socket", 0)
        op(JEQ, abi.socketpair, "socketpair", 0)
        if abi.socketcall is not None:
            op(JEQ, abi.socketcall, "socketcall", 0)
        op(JEQ, IO_URING_SETUP, "enosys", "allow")

    op(LD_ABS, ARCH)
    op(JEQ, spec.native.arch, 0, "compat")
    op(LD_ABS, NR)
    if spec.x32:
        op(AND, ~X32_SYSCALL_BIT & 0xFFFFFFFF)
    dispatch(spec.native)
    label("compat")
    op(JEQ, spec.compat.arch, 0, "enosys")
    op(LD_ABS, NR)
    dispatch(spec.compat)
    label("socket")
    op(LD_ABS, ARG0)
    op(JEQ, AF_UNIX, "eacces", "allow")
    label("socketpair")
    op(LD_ABS, ARG0)
    op(JEQ, AF_UNIX, 0, "allow")
    op(LD_ABS, ARG1)
    op(AND, SOCK_TYPE_MASK)
    op(JEQ, SOCK_DGRAM, "eacces", "allow")
    if spec.compat.socketcall is not None:
        label("socketcall")
        op(LD_ABS, ARG0)
        op(JEQ, SYS_SOCKET, "eacces", 0)
        op(JEQ, SYS_SOCKETPAIR, "eacces", "allow")
    label("eacces")
    op(RET, SECCOMP_RET_ERRNO | errno.EACCES)
    label("enosys")
    op(RET, SECCOMP_RET_ERRNO | errno.ENOSYS)
    label("allow")
    op(RET, SECCOMP_RET_ALLOW)

    out = bytearray()
    for at, (code_, jt, jf, k) in enumerate(code):
        # A jump's offsets count the instructions skipped after it: forward only, at most 255.
        jt_, jf_ = (labels[j] - at - 1 if isinstance(j, str) else j for j in (jt, jf))
        out += struct.pack("<HBBI", code_, jt_, jf_, k)
    return bytes(out)
