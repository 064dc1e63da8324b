"""The zlib streams of an ELF file's compressed sections (SHF_COMPRESSED,
ELFCOMPRESS_ZLIB), as Debian's -dbg packages ship their DWARF: for the
inflate bench (bench_gzip.sh) and inflate_cost.py.  ELF64 little endian only."""
import glob
import os
import platform
import struct

# Debian's directory of this machine's own libraries (x86_64-linux-gnu,
# aarch64-linux-gnu), and its C library.
MULTIARCH_LIB = f"/lib/{platform.machine()}-linux-gnu"
LIBC = os.path.join(MULTIARCH_LIB, "libc.so.6")

SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1


def compressed_sections(path):
    """[(name, zlib stream bytes, inflated size)] in section order."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    out = []
    for h in headers:
        name_off, _, flags, _, offset, size = h[:6]
        if not flags & SHF_COMPRESSED or size < 24:
            continue
        ch_type, _, ch_size = struct.unpack_from("<IIQ", data, offset)
        if ch_type != ELFCOMPRESS_ZLIB:
            continue
        start = strtab[4] + name_off
        name = data[start:data.index(b"\0", start)].decode()
        out.append((name, data[offset + 24:offset + size], ch_size))
    return out


def libc_debug_file():
    """libc6-dbg's detached debug file for this system's libc.so.6, or None."""
    for libc in (LIBC,):
        if not os.path.exists(libc):
            continue
        data = open(libc, "rb").read()
        note = data.find(b"GNU\0", 0, 4096)
        while note >= 0:
            namesz, descsz, kind = struct.unpack_from("<III", data, note - 12)
            if namesz == 4 and kind == 3:
                build_id = data[note + 4:note + 4 + descsz].hex()
                path = f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug"
                return path if os.path.exists(path) else None
            note = data.find(b"GNU\0", note + 4, 4096)
    return None


def gzip_files(limit=200):
    """The system's gzip files (documentation, manual pages), largest first."""
    paths = glob.glob("/usr/share/doc/*/*.gz") + glob.glob("/usr/share/man/man*/*.gz")
    paths = [p for p in paths if os.path.isfile(p)]
    paths.sort(key=lambda p: -os.path.getsize(p))
    return paths[:limit]
