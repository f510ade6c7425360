// DumpCheck: opens a Linux core dump written by createdump with ClrMD and
// prints one JSON document saying what it holds: the process (pid, name,
// command line), the runtime and the DAC used to read it, the size of each GC
// generation, the objects above a size by type, and the managed threads with
// their top frames. dumpwatch's integration tests assert on it
// (tests/integration/lib.sh, check_dump); docs/dumps.md shows its output for
// each dump type.
//
//   DumpCheck [--min-object-size BYTES] [--frames N] [--dac PATH] CORE
//
// Exit status: 0 the document was printed; 1 the file is not a dump this tool
// can open (one line on stderr says why); 2 bad command line.
//
// Nothing is downloaded: the DAC (libmscordaccore.so) must be on disk, and
// ClrMD's file locator (a symbol-server client) is switched off.
using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text.Encodings.Web;
using System.Text.Json;
using Microsoft.Diagnostics.Runtime;

static class Program
{
    const string Usage = "usage: DumpCheck [--min-object-size BYTES] [--frames N] [--dac PATH] CORE";

    static int Main(string[] args)
    {
        ulong minSize = 85000; // the runtime's default large object threshold
        int frames = 10;
        string? dac = null, core = null;
        for (int i = 0; i < args.Length; i++) {
            string a = args[i];
            string? Value() => i + 1 < args.Length ? args[++i] : null;
            switch (a) {
            case "--min-object-size":
                if (!ulong.TryParse(Value(), out minSize))
                    return UsageError("--min-object-size needs a number of bytes");
                break;
            case "--frames":
                if (!int.TryParse(Value(), out frames) || frames < 0)
                    return UsageError("--frames needs a count");
                break;
            case "--dac":
                dac = Value() ?? "";
                if (dac == "")
                    return UsageError("--dac needs the path of libmscordaccore.so");
                break;
            case "-h":
            case "--help":
                Console.WriteLine(Usage);
                return 0;
            default:
                if (a.StartsWith('-') || core != null)
                    return UsageError($"unexpected argument '{a}'");
                core = a;
                break;
            }
        }
        if (core == null)
            return UsageError("no dump file given");
        try {
            return Check(core, minSize, frames, dac);
        } catch (CannotOpen e) {
            Console.Error.WriteLine($"DumpCheck: {core}: cannot open: {e.Message}");
            return 1;
        } catch (Exception e) when (e is IOException or UnauthorizedAccessException) {
            Console.Error.WriteLine($"DumpCheck: {core}: cannot read: {OneLine(e.Message)}");
            return 1;
        } catch (Exception e) {
            // ClrMD reading a damaged or truncated dump can fail anywhere.
            Console.Error.WriteLine($"DumpCheck: {core}: cannot read the dump: {e.GetType().Name}: {OneLine(e.Message)}");
            return 1;
        }
    }

    static int UsageError(string why)
    {
        Console.Error.WriteLine($"DumpCheck: {why}\n{Usage}");
        return 2;
    }

    sealed class CannotOpen(string message) : Exception(message);

    static int Check(string path, ulong minSize, int maxFrames, string? dacOption)
    {
        if (Directory.Exists(path))
            throw new CannotOpen("a directory, not a dump file");
        var elf = Elf.ReadCore(path, out string elfError) ?? throw new CannotOpen(elfError);
        DataTarget target;
        try {
            target = DataTarget.LoadDump(path);
        } catch (Exception e) {
            throw new CannotOpen($"ClrMD cannot read it as a dump ({e.GetType().Name}: {OneLine(e.Message)})");
        }
        using (target) {
            // Never ask a symbol server for anything (no network here, and a
            // test must not depend on one).
            target.FileLocator = null;
            if (target.ClrVersions.Length == 0)
                throw new CannotOpen($"no .NET runtime (libcoreclr.so) in the dump of pid {elf.Pid} ({elf.Name})");
            ClrInfo clr = target.ClrVersions[0];
            string buildId = Convert.ToHexStringLower(clr.ModuleInfo.BuildId.AsSpan());
            var tried = new List<string>();
            var (dac, verified) = FindDac(clr, buildId, dacOption, tried);
            if (dac == null)
                throw new CannotOpen($"no DAC (libmscordaccore.so) beside a libcoreclr.so of build id " +
                                     $"{(buildId == "" ? "(not in the dump)" : buildId)} on disk; tried " +
                                     $"{string.Join(", ", tried)}; pass --dac PATH");
            // The runtime library beside the DAC is the dump's own build when
            // verified: its version string and its CoreLib's product version
            // are the dump's runtime's.
            string dacDir = Path.GetDirectoryName(dac) ?? ".";
            string? sccs = verified ? Elf.SccsVersion(Path.Combine(dacDir, "libcoreclr.so")) : null;
            string? clrVersion = clr.Version.Major > 0 ? clr.Version.ToString() : sccs?.Split(' ')[0];
            string? product = verified ? ProductVersion(Path.Combine(dacDir, "System.Private.CoreLib.dll")) : null;
            ClrRuntime runtime;
            try {
                // ClrMD compares the DAC's version with the one it read from
                // the dump, 0.0 for createdump's dumps; the build id check
                // above is the real one.
                runtime = clr.CreateRuntime(dac, ignoreMismatch: true);
            } catch (Exception e) {
                throw new CannotOpen($"the DAC {dac} cannot read the runtime in the dump " +
                                     $"({e.GetType().Name}: {OneLine(e.Message)})");
            }
            using (runtime) {
                // The document is printed only once whole: a dump that fails
                // half-way gives one line on stderr and no partial JSON.
                var doc = new MemoryStream();
                // Relaxed escaping: "<Main>$" stays readable; control
                // characters are still escaped.
                using var w = new Utf8JsonWriter(doc, new JsonWriterOptions {
                    Indented = true, Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
                w.WriteStartObject();
                w.WriteString("file", Path.GetFullPath(path));
                w.WriteNumber("file_bytes", new FileInfo(path).Length);
                w.WriteNumber("pid", elf.Pid);
                w.WriteString("process_name", elf.Name);
                if (elf.CommandLine != "")
                    w.WriteString("command_line", elf.CommandLine);
                w.WriteStartObject("runtime");
                w.WriteString("clr_version", clrVersion);
                w.WriteString("product_version", product);
                w.WriteString("flavor", clr.Flavor.ToString());
                w.WriteString("module", clr.ModuleInfo.FileName);
                w.WriteString("build_id", buildId);
                w.WriteString("dac", dac);
                w.WriteBoolean("dac_verified", verified);
                w.WriteEndObject();
                WriteHeap(w, target, runtime, minSize);
                WriteThreads(w, runtime, maxFrames);
                w.WriteEndObject();
                w.Flush();
                doc.Write("\n"u8);
                using var stdout = Console.OpenStandardOutput();
                doc.WriteTo(stdout);
            }
        }
        return 0;
    }

    // The DAC must come from the build of the runtime in the dump: it is
    // taken from a directory whose libcoreclr.so has the dump's build id
    // (verified). Looked for in order: --dac (taken even unverified: the
    // caller said so); beside the runtime module as the dump records it (a
    // framework-dependent app's shared runtime, or a self-contained app's own
    // directory); the shared runtimes beside the one this tool runs on (a
    // dump taken in another mount namespace records a path that may not exist
    // here); what ClrMD lists as local debugging libraries.
    static (string? Dac, bool Verified) FindDac(ClrInfo clr, string buildId, string? option, List<string> tried)
    {
        const string Name = "libmscordaccore.so";
        bool Matches(string dac) => buildId != "" &&
            Elf.BuildId(Path.Combine(Path.GetDirectoryName(dac) ?? ".", "libcoreclr.so")) == buildId;
        if (option != null) {
            if (!File.Exists(option))
                throw new CannotOpen($"--dac {option}: no such file");
            return (Path.GetFullPath(option), Matches(option));
        }
        var candidates = new List<string>();
        string? moduleDir = Path.GetDirectoryName(clr.ModuleInfo.FileName);
        if (!string.IsNullOrEmpty(moduleDir))
            candidates.Add(Path.Combine(moduleDir, Name));
        string? shared = Path.GetDirectoryName(RuntimeEnvironment.GetRuntimeDirectory().TrimEnd('/'));
        if (shared != null && Directory.Exists(shared))
            foreach (var dir in Directory.GetDirectories(shared).Order(StringComparer.Ordinal))
                candidates.Add(Path.Combine(dir, Name));
        foreach (var lib in clr.DebuggingLibraries)
            if (lib.Kind == DebugLibraryKind.Dac && Path.IsPathRooted(lib.FileName))
                candidates.Add(lib.FileName);
        foreach (var c in candidates.Distinct()) {
            tried.Add(c);
            if (File.Exists(c) && Matches(c))
                return (c, true);
        }
        return (null, false);
    }

    // The product version ("10.0.12") of System.Private.CoreLib.dll, without
    // the "+commit" suffix; null when it cannot be read.
    static string? ProductVersion(string coreLib)
    {
        try {
            return File.Exists(coreLib) ? FileVersionInfo.GetVersionInfo(coreLib).ProductVersion?.Split('+')[0] : null;
        } catch (Exception e) when (e is IOException or UnauthorizedAccessException or BadImageFormatException) {
            return null;
        }
    }

    // "heap": the generations from the GC's segment (or region) list, and the
    // objects when the dump holds the heap's memory; null with "heap_reason"
    // when the dump does not even hold the segment list.
    static void WriteHeap(Utf8JsonWriter w, DataTarget target, ClrRuntime runtime, ulong minSize)
    {
        ClrHeap heap;
        try {
            heap = runtime.Heap;
            _ = heap.Segments.Length;
        } catch (Exception e) {
            w.WriteNull("heap");
            w.WriteString("heap_reason", $"the GC heap cannot be read ({e.GetType().Name}: {OneLine(e.Message)})");
            return;
        }
        if (heap.Segments.IsEmpty) {
            w.WriteNull("heap");
            w.WriteString("heap_reason", "the dump holds no GC segment or region list");
            return;
        }
        // Bytes of objects by generation, per the GC's own bookkeeping, and
        // how many of them the dump holds the memory of.
        string[] names = ["gen0", "gen1", "gen2", "loh", "poh", "frozen"];
        var size = new ulong[names.Length];
        var inDump = new ulong[names.Length];
        void Add(int gen, MemoryRange r)
        {
            size[gen] += r.Length;
            inDump[gen] += BytesInDump(target.DataReader, r);
        }
        var present = new List<ClrSegment>();
        foreach (var seg in heap.Segments) {
            ulong before = inDump.Aggregate(0UL, (a, b) => a + b);
            switch (seg.Kind) {
            case GCSegmentKind.Generation0: Add(0, seg.ObjectRange); break;
            case GCSegmentKind.Generation1: Add(1, seg.ObjectRange); break;
            case GCSegmentKind.Generation2: Add(2, seg.ObjectRange); break;
            case GCSegmentKind.Large: Add(3, seg.ObjectRange); break;
            case GCSegmentKind.Pinned: Add(4, seg.ObjectRange); break;
            case GCSegmentKind.Frozen: Add(5, seg.ObjectRange); break;
            case GCSegmentKind.Ephemeral: // segments, not regions: one segment holds gen0-gen2
                Add(0, seg.Generation0);
                Add(1, seg.Generation1);
                Add(2, seg.Generation2);
                break;
            }
            if (inDump.Aggregate(0UL, (a, b) => a + b) > before)
                present.Add(seg);
        }
        w.WriteStartObject("heap");
        w.WriteBoolean("server", heap.IsServer);
        w.WriteNumber("subheaps", heap.SubHeaps.Length);
        w.WriteBoolean("regions", heap.SubHeaps.Any(h => h.HasRegions));
        w.WriteNumber("segments", heap.Segments.Length);
        w.WriteNumber("segments_in_dump", present.Count);
        w.WriteStartObject("generations");
        for (int i = 0; i < names.Length; i++)
            w.WriteNumber(names[i], size[i]);
        w.WriteEndObject();
        w.WriteStartObject("generations_in_dump");
        for (int i = 0; i < names.Length; i++)
            w.WriteNumber(names[i], inDump[i]);
        w.WriteEndObject();
        // Frozen segments hold the runtime's own literals, which even a dump
        // without the GC heap may hold: the objects are the GC heap's only
        // when some of gen0-gen2, LOH or POH is there.
        ulong gcInDump = inDump.Take(5).Aggregate(0UL, (a, b) => a + b);
        if (gcInDump == 0 || !heap.CanWalkHeap) {
            w.WriteNull("objects");
            w.WriteString("objects_reason", gcInDump == 0
                ? $"the dump holds the GC's list of {heap.Segments.Length} segments but none of their objects' memory"
                : "ClrMD says the heap cannot be walked (the dump was taken during a GC)");
            w.WriteEndObject();
            return;
        }
        long count = 0, freeCount = 0;
        ulong bytes = 0, freeBytes = 0;
        var large = new Dictionary<string, (long Count, ulong Bytes)>();
        foreach (var obj in present.SelectMany(seg => seg.EnumerateObjects())) {
            if (!obj.IsValid)
                continue;
            ulong objSize = obj.Size;
            if (obj.IsFree) {
                freeCount++;
                freeBytes += objSize;
                continue;
            }
            count++;
            bytes += objSize;
            if (objSize < minSize)
                continue;
            string type = obj.Type?.Name ?? "<unknown type>";
            large.TryGetValue(type, out var t);
            large[type] = (t.Count + 1, t.Bytes + objSize);
        }
        w.WriteStartObject("objects");
        w.WriteNumber("count", count);
        w.WriteNumber("bytes", bytes);
        w.WriteNumber("free_count", freeCount);
        w.WriteNumber("free_bytes", freeBytes);
        w.WriteBoolean("complete", inDump.SequenceEqual(size));
        w.WriteNumber("min_object_size", minSize);
        w.WriteStartArray("large");
        foreach (var (type, t) in large.OrderByDescending(kv => kv.Value.Bytes).ThenBy(kv => kv.Key, StringComparer.Ordinal)) {
            w.WriteStartObject();
            w.WriteString("type", type);
            w.WriteNumber("count", t.Count);
            w.WriteNumber("bytes", t.Bytes);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
        w.WriteEndObject();
    }

    // How many bytes of `r` the dump holds: one probe per 4 KiB page (a core
    // file holds memory in whole pages).
    static ulong BytesInDump(IDataReader reader, MemoryRange r)
    {
        const ulong Page = 4096;
        ulong n = 0;
        Span<byte> one = stackalloc byte[1];
        for (ulong p = r.Start & ~(Page - 1); p < r.End; p += Page) {
            ulong from = Math.Max(p, r.Start), to = Math.Min(p + Page, r.End);
            if (reader.Read(from, one) == 1)
                n += to - from;
        }
        return n;
    }

    // "threads": every thread the runtime knows, with its top managed frames.
    static void WriteThreads(Utf8JsonWriter w, ClrRuntime runtime, int maxFrames)
    {
        w.WriteStartArray("threads");
        foreach (var t in runtime.Threads) {
            w.WriteStartObject();
            w.WriteNumber("managed_id", t.ManagedThreadId);
            w.WriteNumber("os_id", t.OSThreadId);
            w.WriteBoolean("alive", t.IsAlive);
            if (t.IsFinalizer)
                w.WriteBoolean("finalizer", true);
            w.WriteStartArray("frames");
            int n = 0;
            string? error = null;
            try {
                foreach (var f in t.EnumerateStackTrace()) {
                    if (n >= maxFrames)
                        break;
                    if (f.Kind != ClrStackFrameKind.ManagedMethod || f.Method == null)
                        continue;
                    w.WriteStringValue(f.Method.Signature ?? $"{f.Method.Type?.Name}.{f.Method.Name}");
                    n++;
                }
            } catch (Exception e) {
                error = $"{e.GetType().Name}: {OneLine(e.Message)}";
            }
            w.WriteEndArray();
            if (error != null)
                w.WriteString("frames_error", error);
            w.WriteEndObject();
        }
        w.WriteEndArray();
    }

    static string OneLine(string s) => s.ReplaceLineEndings(" ");
}
