// Elf: the few facts DumpCheck reads from ELF files itself, because ClrMD does
// not give them: from a core file, its NT_PRPSINFO note (pid, the kernel's
// 16-byte command name, the first 80 bytes of the command line), which
// createdump writes as the kernel does; from a runtime library on disk, its
// GNU build id and its "@(#)Version" string (ClrMD 3.1 reads the version from
// the dump's memory, and createdump's dumps do not hold that page, so ClrMD
// says 0.0). Files are input from outside: every offset and length is checked
// against the file's size.
using System.Buffers.Binary;
using System.Text;

sealed class ElfCore
{
    public int Pid { get; init; }
    public string Name { get; init; } = "";
    public string CommandLine { get; init; } = "";
}

static class Elf
{
    const ushort EtCore = 4;
    const uint PtNote = 4;
    const uint NtPrpsinfo = 3, NtGnuBuildId = 3;
    const int PrpsinfoSize = 136; // struct elf_prpsinfo on x86-64 and arm64
    const long MaxNoteBytes = 64 << 20; // the notes of a real core are a few MB

    // The process an ELF core file is of; null with the reason in `error`
    // when the file is not a 64-bit ELF core with an NT_PRPSINFO note.
    public static ElfCore? ReadCore(string path, out string error)
    {
        using var f = File.OpenRead(path);
        var notes = Notes(f, EtCore, out error, out ulong needed);
        if (error == "" && needed > (ulong)f.Length) {
            error = $"truncated: its segments end at byte {needed}, the file has {f.Length}";
            return null;
        }
        foreach (var (name, type, desc) in notes) {
            if (name != "CORE" || type != NtPrpsinfo || desc.Length < PrpsinfoSize)
                continue;
            return new ElfCore {
                Pid = BinaryPrimitives.ReadInt32LittleEndian(desc.AsSpan(24)),
                Name = CString(desc.AsSpan(40, 16)),
                CommandLine = CString(desc.AsSpan(56, 80)).TrimEnd(),
            };
        }
        if (error == "")
            error = "an ELF core file without an NT_PRPSINFO note";
        return null;
    }

    // The GNU build id of a shared library on disk, lower-case hex; null when
    // the file cannot be read or has none.
    public static string? BuildId(string path)
    {
        try {
            using var f = File.OpenRead(path);
            foreach (var (name, type, desc) in Notes(f, null, out _, out _))
                if (name == "GNU" && type == NtGnuBuildId)
                    return Convert.ToHexStringLower(desc);
        } catch (IOException) {
        } catch (UnauthorizedAccessException) {
        }
        return null;
    }

    // The text after "@(#)Version " in a runtime library (libcoreclr.so
    // embeds "@(#)Version 10.0.1226.42308 @Commit: 95017c7..."), up to the
    // first NUL; null when there is none.
    public static string? SccsVersion(string path)
    {
        const long MaxLibrary = 256 << 20;
        try {
            if (new FileInfo(path).Length > MaxLibrary)
                return null;
            byte[] all = File.ReadAllBytes(path);
            ReadOnlySpan<byte> tag = "@(#)Version "u8;
            int at = all.AsSpan().IndexOf(tag);
            if (at < 0)
                return null;
            var rest = all.AsSpan(at + tag.Length, Math.Min(200, all.Length - at - tag.Length));
            return CString(rest).Trim();
        } catch (IOException) {
        } catch (UnauthorizedAccessException) {
        }
        return null;
    }

    // Every note in the PT_NOTE segments of a 64-bit little-endian ELF file
    // (of type `wantType` when given), and where its last segment ends
    // (`needed`). Stops, with `error` set, at the first thing that is not so.
    static List<(string Name, uint Type, byte[] Desc)> Notes(FileStream f, ushort? wantType, out string error,
                                                             out ulong needed)
    {
        var notes = new List<(string, uint, byte[])>();
        error = "";
        needed = 0;
        long size = f.Length;
        var eh = new byte[64];
        if (size < eh.Length || f.Read(eh, 0, eh.Length) != eh.Length) {
            error = "too small to be an ELF core file";
            return notes;
        }
        if (eh[0] != 0x7f || eh[1] != (byte)'E' || eh[2] != (byte)'L' || eh[3] != (byte)'F') {
            error = "not an ELF file (createdump on Linux writes ELF core files)";
            return notes;
        }
        if (eh[4] != 2 || eh[5] != 1) {
            error = "not a 64-bit little-endian ELF file";
            return notes;
        }
        ushort type = BinaryPrimitives.ReadUInt16LittleEndian(eh.AsSpan(16));
        if (wantType is ushort want && type != want) {
            error = $"an ELF file of type {type}, not a core file (type {want})";
            return notes;
        }
        ulong phoff = BinaryPrimitives.ReadUInt64LittleEndian(eh.AsSpan(32));
        ushort phentsize = BinaryPrimitives.ReadUInt16LittleEndian(eh.AsSpan(54));
        ushort phnum = BinaryPrimitives.ReadUInt16LittleEndian(eh.AsSpan(56));
        if (phentsize < 56 || phoff > (ulong)size || (ulong)phnum * phentsize > (ulong)size - phoff) {
            error = "its program headers lie outside the file";
            return notes;
        }
        var ph = new byte[phnum * phentsize];
        f.Position = (long)phoff;
        f.ReadExactly(ph);
        for (int i = 0; i < phnum; i++) {
            var h = ph.AsSpan(i * phentsize, phentsize);
            ulong off = BinaryPrimitives.ReadUInt64LittleEndian(h.Slice(8));
            ulong len = BinaryPrimitives.ReadUInt64LittleEndian(h.Slice(32));
            if (off + len >= off) // not wrapped
                needed = Math.Max(needed, off + len);
            if (BinaryPrimitives.ReadUInt32LittleEndian(h) != PtNote)
                continue;
            if (off > (ulong)size || len > (ulong)size - off || len > MaxNoteBytes)
                continue;
            var seg = new byte[len];
            f.Position = (long)off;
            f.ReadExactly(seg);
            long pos = 0;
            while (pos + 12 <= seg.Length) {
                uint namesz = BinaryPrimitives.ReadUInt32LittleEndian(seg.AsSpan((int)pos));
                uint descsz = BinaryPrimitives.ReadUInt32LittleEndian(seg.AsSpan((int)pos + 4));
                uint ntype = BinaryPrimitives.ReadUInt32LittleEndian(seg.AsSpan((int)pos + 8));
                long name = pos + 12, desc = name + ((namesz + 3L) & ~3L);
                if (desc + descsz > seg.Length)
                    break;
                notes.Add((CString(seg.AsSpan((int)name, (int)namesz)), ntype, seg.AsSpan((int)desc, (int)descsz).ToArray()));
                pos = desc + ((descsz + 3L) & ~3L);
            }
        }
        return notes;
    }

    // A NUL-terminated field; invalid UTF-8 becomes U+FFFD.
    static string CString(ReadOnlySpan<byte> b)
    {
        int n = b.IndexOf((byte)0);
        return Encoding.UTF8.GetString(n < 0 ? b : b.Slice(0, n));
    }
}
