"""The seccomp filter's program, run by a small classic-BPF interpreter on made-up calls of each
supported machine (the real kernel runs it in tests/test_sandbox.py)."""

from __future__ import annotations

import struct

import pytest

from scout_tui.tools import seccomp

# Written out here rather than taken from the module, so a wrong constant there shows.
LD_W_ABS, ALU_AND_K, JMP_JEQ_K, RET_K = 0x20, 0x54, 0x15, 0x06
ALLOW, EACCES, ENOSYS = 0x7FFF0000, 0x00050000 | 13, 0x00050000 | 38
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
AF_UNIX, AF_INET, SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 2, 1, 2, 5
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000


def instructions(program: bytes) -> list[tuple[int, int, int, int]]:
    assert len(program) % 8 == 0
    return [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]


def run(machine: str, arch: int, nr: int, *args: int) -> int:
    """What the filter for ``machine`` returns for syscall ``nr`` of ABI ``arch`` (seccomp(2)'s
    ``struct seccomp_data``, little-endian)."""
    program = seccomp.program(machine)
    assert program is not None
    data = struct.pack("<iIQ6Q", nr, arch, 0x400000, *(list(args) + [0] * (6 - len(args))))
    acc = pc = 0
    code = instructions(program)
    while True:
        op, jt, jf, k = code[pc]
        if op == LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == ALU_AND_K:
            acc &= k
        elif op == JMP_JEQ_K:
            pc += jt if acc == k else jf
        elif op == RET_K:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x} at {pc}")
        pc += 1


@pytest.mark.parametrize("machine", seccomp.MACHINES)
def test_the_program_is_well_formed(machine: str) -> None:
    code = instructions(seccomp.program(machine) or b"")
    assert code[0] == (LD_W_ABS, 0, 0, 4)  # arch first, as seccomp(2) asks
    assert code[-1][0] == RET_K and len(code) < 4096  # BPF_MAXINSNS
    for at, (op, jt, jf, _) in enumerate(code):
        if op == JMP_JEQ_K:
            assert at + 1 + max(jt, jf) < len(code)
        else:
            assert jt == jf == 0


# (machine, native arch, socket, socketpair, compat arch, compat socket, compat socketpair)
ABIS = [("x86_64", X86_64, 41, 53, I386, 359, 360), ("aarch64", AARCH64, 198, 199, ARM, 281, 288)]


@pytest.mark.parametrize("machine, native, socket, socketpair, compat, compat_socket, compat_socketpair", ABIS)
def test_unix_sockets_are_refused_in_both_abis(machine: str, native: int, socket: int, socketpair: int,
                                               compat: int, compat_socket: int, compat_socketpair: int) -> None:
    for arch, nr in ((native, socket), (compat, compat_socket)):
        assert run(machine, arch, nr, AF_UNIX, SOCK_STREAM) == EACCES
        assert run(machine, arch, nr, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC) == EACCES
        assert run(machine, arch, nr, AF_INET, SOCK_STREAM) == ALLOW
    for arch, nr in ((native, socketpair), (compat, compat_socketpair)):
        assert run(machine, arch, nr, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC) == ALLOW
        assert run(machine, arch, nr, AF_UNIX, SOCK_SEQPACKET) == ALLOW
        assert run(machine, arch, nr, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK) == EACCES


@pytest.mark.parametrize("machine, native", [("x86_64", X86_64), ("aarch64", AARCH64)])
def test_higher_bits_of_the_domain_do_not_hide_af_unix(machine: str, native: int) -> None:
    # The kernel takes an int: 0x1_0000_0001 is AF_UNIX to it.
    assert run(machine, native, seccomp.MACHINES[machine].native.socket, 0x1_0000_0001, SOCK_STREAM) == EACCES


@pytest.mark.parametrize("machine, native, compat", [("x86_64", X86_64, I386), ("aarch64", AARCH64, ARM)])
def test_other_calls_are_allowed_and_io_uring_is_not_there(machine: str, native: int, compat: int) -> None:
    for nr in (0, 1, 42, 59, 203, 221, 0x7FFFFFFF):
        assert run(machine, native, nr, AF_UNIX) == ALLOW
    assert run(machine, native, 425) == ENOSYS
    assert run(machine, compat, 425) == ENOSYS


def test_x32_calls_meet_the_same_rules_on_x86_64() -> None:
    assert run("x86_64", X86_64, 0x40000000 | 41, AF_UNIX, SOCK_STREAM) == EACCES
    assert run("x86_64", X86_64, 0x40000000 | 41, AF_INET, SOCK_STREAM) == ALLOW
    assert run("x86_64", X86_64, 0x40000000 | 425) == ENOSYS


def test_32_bit_x86_socketcall_cannot_create_sockets() -> None:
    # Its arguments are behind a pointer: socket and socketpair are refused for every domain.
    assert run("x86_64", I386, 102, 1) == EACCES  # SYS_SOCKET
    assert run("x86_64", I386, 102, 8) == EACCES  # SYS_SOCKETPAIR
    assert run("x86_64", I386, 102, 3) == ALLOW  # SYS_CONNECT: there is no unix socket to connect


@pytest.mark.parametrize("machine", seccomp.MACHINES)
def test_an_unknown_abi_gets_enosys(machine: str) -> None:
    assert run(machine, 0x4000003E, 0) == ENOSYS  # neither native nor compat


def test_no_program_for_other_machines() -> None:
    assert seccomp.program("riscv64") is None
    assert seccomp.program("ppc64le") is None
