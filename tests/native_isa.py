"""Which x86-64 instructions a native binary uses beyond x86-64-v3 (AVX2), for the portability
checks of the binaries the tests run (`test_native_isa.py`).

Two views, because each misses what the other sees: `avx512_outside_dispatch` reads the
machine code (objdump) and lists the functions that use AVX-512 although their name does not
mark a variant chosen at run time (PostgreSQL's ``pg_popcount_avx512``, pgvector's
``BitHammingDistanceAvx512Popcount``: called only after a CPUID check); `on_avx2_cpu` runs a
program on an emulated CPU without AVX-512 (QEMU's user mode, ``-cpu Haswell``), where such an
instruction is an illegal instruction, as on the machines of most users.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

# An operand only AVX-512 has: zmm registers, mask registers, xmm/ymm 16-31, embedded broadcast.
AVX512_OPERAND = re.compile(r"%zmm\d|%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b|\{1to\d+\}")
SKIPPED_PREFIXES = {"67", "2e", "3e", "26", "64", "65", "36"}
DISPATCHED = re.compile(r"avx512", re.IGNORECASE)  # a variant a CPUID check chooses
AVX2_CPU = "Haswell"  # x86-64-v3: AVX2, FMA, F16C, BMI2; no AVX-512


def avx512_functions(binary: Path) -> Counter[str]:
    """AVX-512 instructions per function of `binary` (an EVEX prefix, 0x62 in 64-bit code, or
    an operand only AVX-512 has)."""
    if shutil.which("objdump") is None:
        raise RuntimeError("objdump is missing: install binutils (make test installs it)")
    listing = subprocess.run(
        ["objdump", "-d", "--no-addresses", "-w", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: Counter[str] = Counter()
    function = "?"
    for line in listing.splitlines():
        header = re.match(r"^<(.+)>:$", line)
        if header:
            function = header.group(1)
            continue
        parts = line.strip().split("\t")
        if len(parts) < 2:
            continue
        raw = parts[0].split()
        while raw and raw[0] in SKIPPED_PREFIXES:
            raw = raw[1:]
        if (raw and raw[0] == "62") or AVX512_OPERAND.search(parts[1]):
            found[function] += 1
    return found


def avx512_outside_dispatch(binary: Path) -> list[str]:
    """The functions of `binary` that use AVX-512 without being a run-time-dispatched variant."""
    return sorted(f for f in avx512_functions(binary) if not DISPATCHED.search(f))


def qemu() -> str:
    """QEMU's x86-64 user-mode emulator, or a clear error naming the package."""
    found = shutil.which("qemu-x86_64")
    if found is None:
        raise RuntimeError(
            "the portability tests run binaries on an emulated AVX2-only CPU: install "
            "qemu-user (make test installs it as root: apt-get install qemu-user)"
        )
    return found


def on_avx2_cpu(command: Sequence[str]) -> list[str]:
    """`command` run on an emulated CPU without AVX-512 (only its first program is emulated;
    programs it starts run natively)."""
    return [qemu(), "-cpu", AVX2_CPU, *command]
