// GcLab: a .NET program that allocates known amounts of each kind at known
// rates, holds and releases them, and induces blocking, background and
// foreground GCs and long GC pauses, for dumpwatch's memory-view tests. Every
// command reports what the program itself measured, so tests can compare.
//
// Commands, one per line on standard input (or ';'-separated after --script):
//   alloc KIND MB SECONDS   allocate MB (10^6 bytes) of garbage of KIND (small: 1000-byte arrays,
//                           large: 100,000-byte arrays, pinned: 1000-byte pinned arrays) evenly over
//                           SECONDS; answers bytes= (this thread's allocated-bytes counter) and ms=
//   hold KIND MB            allocate MB of KIND and keep it
//   release                 drop everything held, then a blocking compacting full GC
//   gc GEN                  a blocking GC of generation GEN
//   bgc GRAPH_MB FG_MBPS    keep GRAPH_MB of small linked objects in gen2, then a background GC while
//                           another thread allocates FG_MBPS MB/s of garbage (foreground GCs happen)
//   stall MS                a thread sits MS ms in native code that the runtime cannot interrupt
//                           (SuppressGCTransition) while a GC is requested: a GC pause of ~MS
//   info                    heap and GC figures as the runtime sees them
//   cache N BYTES NODES     hold N byte[BYTES] in the static list Cache.s_entries and a tree of NODES
//                           HeapNode objects (each with a HeapLeaf) in Graph.s_root, for the heap
//                           snapshot tests; answers the counts and sizes it made
//   sleep MS, exit
// Every command answers "done <command> ..." with key=value figures.
using System.Diagnostics;
using System.Runtime.InteropServices;

const int MB = 1_000_000;
var held = new List<object>();
object? sink = null;

long Now() => Stopwatch.GetTimestamp() * 1000 / Stopwatch.Frequency;

object One(string kind) => kind switch {
    "small" => new byte[1000 - 24],
    "large" => new byte[100_000 - 24],
    "pinned" => GC.AllocateArray<byte>(1000 - 24, pinned: true),
    _ => throw new ArgumentException($"unknown kind {kind}"),
};
int Size(string kind) => kind == "large" ? 100_000 : 1000;

string Alloc(string kind, long mb, double seconds)
{
    long total = mb * MB, done = 0, size = Size(kind);
    long t0 = Now(), b0 = GC.GetAllocatedBytesForCurrentThread();
    long slices = Math.Max(1, (long)(seconds * 100));
    for (long s = 1; s <= slices; s++) {
        long target = total * s / slices;
        for (; done < target; done += size) sink = One(kind);
        long wait = t0 + s * 10 - Now();
        if (wait > 0) Thread.Sleep((int)wait);
    }
    GC.KeepAlive(sink);
    sink = null;
    return $"bytes={GC.GetAllocatedBytesForCurrentThread() - b0} ms={Now() - t0}";
}

string Hold(string kind, long mb)
{
    long b0 = GC.GetAllocatedBytesForCurrentThread(), size = Size(kind);
    for (long done = 0; done < mb * MB; done += size) held.Add(One(kind));
    return $"bytes={GC.GetAllocatedBytesForCurrentThread() - b0}";
}

string Info()
{
    var i = GC.GetGCMemoryInfo(GCKind.Any);
    return $"gc_index={i.Index} heap={GC.GetTotalMemory(false)} total_allocated={GC.GetTotalAllocatedBytes(true)} " +
           $"gen0={GC.CollectionCount(0)} gen1={GC.CollectionCount(1)} gen2={GC.CollectionCount(2)} " +
           $"pause_ms={GC.GetTotalPauseDuration().TotalMilliseconds:F1}";
}

string Bgc(long graphMb, int fgMbps)
{
    // A graph of small nodes, promoted to gen2, for the background GC to mark.
    var nodes = new object[graphMb * MB / 1000];
    for (int i = 0; i < nodes.Length; i++) nodes[i] = new byte[1000 - 24];
    GC.Collect(2, GCCollectionMode.Forced, blocking: true);
    int fg0 = GC.CollectionCount(0);
    long bgBefore = GC.GetGCMemoryInfo(GCKind.Background).Index;
    var stop = false;
    var churn = new Thread(() => {
        object? s = null;
        while (!Volatile.Read(ref stop)) {
            long t = Now();
            for (long b = 0; b < (long)fgMbps * MB / 100; b += 1000) s = new byte[1000 - 24];
            long w = 10 - (Now() - t);
            if (w > 0) Thread.Sleep((int)w);
        }
        GC.KeepAlive(s);
    });
    churn.Start();
    Thread.Sleep(50);
    GC.Collect(2, GCCollectionMode.Forced, blocking: false);
    long deadline = Now() + 20000;
    while (GC.GetGCMemoryInfo(GCKind.Background).Index == bgBefore && Now() < deadline) Thread.Sleep(5);
    Volatile.Write(ref stop, true);
    churn.Join();
    var bg = GC.GetGCMemoryInfo(GCKind.Background);
    GC.KeepAlive(nodes);
    return $"bgc_index={bg.Index} foreground_or_ephemeral={GC.CollectionCount(0) - fg0} " +
           $"bgc_pause_ms={bg.PauseDurations[0].TotalMilliseconds:F2}+{bg.PauseDurations[1].TotalMilliseconds:F2}";
}

string Stall(int ms)
{
    var entered = new ManualResetEventSlim();
    // A timerfd read: restarted after the runtime's activation signal (a
    // sleep would return early on it), so the thread stays in native code.
    int tfd = Native.timerfd_create(1 /* CLOCK_MONOTONIC */, 0);
    if (tfd < 0) throw new InvalidOperationException("timerfd_create failed");
    var spec = new long[] { 0, 0, ms / 1000, (ms % 1000) * 1_000_000L };
    if (Native.timerfd_settime(tfd, 0, spec, IntPtr.Zero) < 0) throw new InvalidOperationException("timerfd_settime failed");
    var buf = new byte[8];
    var t = new Thread(() => { entered.Set(); Native.read(tfd, buf, 8); });
    t.Start();
    entered.Wait();
    Thread.Sleep(20); // the thread is inside usleep now
    long t0 = Now();
    GC.Collect(0, GCCollectionMode.Forced, blocking: true);
    long took = Now() - t0;
    t.Join();
    Native.close(tfd);
    return $"gc_index={GC.GetGCMemoryInfo(GCKind.Any).Index} collect_ms={took}";
}

string? Run(string line)
{
    var p = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
    if (p.Length == 0) return "";
    long Arg(int i, long d) => p.Length > i ? long.Parse(p[i]) : d;
    switch (p[0]) {
    case "alloc": return Alloc(p[1], Arg(2, 100), p.Length > 3 ? double.Parse(p[3]) : 1);
    case "hold": return Hold(p[1], Arg(2, 100));
    case "release":
        held.Clear();
        GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
        return $"gc_index={GC.GetGCMemoryInfo(GCKind.Any).Index}";
    case "gc":
        GC.Collect((int)Arg(1, 2), GCCollectionMode.Forced, blocking: true);
        return $"gc_index={GC.GetGCMemoryInfo(GCKind.Any).Index}";
    case "bgc": return Bgc(Arg(1, 200), (int)Arg(2, 200));
    case "stall": return Stall((int)Arg(1, 1500));
    case "info": return Info();
    case "cache": return HeapSet.Make((int)Arg(1, 400), (int)Arg(2, 1 << 20), (int)Arg(3, 100_000));
    case "sleep": Thread.Sleep((int)Arg(1, 0)); return "";
    case "exit": Console.WriteLine($"done {line}"); Environment.Exit((int)Arg(1, 0)); return null;
    default: return null;
    }
}

void Do(string line)
{
    string? r;
    try { r = Run(line); } catch (Exception e) { r = null; Console.WriteLine($"error {line}: {e.Message}"); return; }
    if (r == null) Console.WriteLine($"error unknown command: {line}");
    else Console.WriteLine($"done {line} {r}".TrimEnd());
}

Console.WriteLine($"ready pid={Environment.ProcessId} runtime={Environment.Version}");
if (args.Length > 1 && args[0] == "--script") {
    foreach (var cmd in args[1].Split(';')) Do(cmd.Trim());
    return;
}
while (Console.ReadLine() is string l) Do(l.Trim());

static class Native {
    [DllImport("libc.so.6", EntryPoint = "read"), SuppressGCTransition]
    public static extern nint read(int fd, byte[] buf, nint count);
    [DllImport("libc.so.6")] public static extern int timerfd_create(int clockid, int flags);
    [DllImport("libc.so.6")] public static extern int timerfd_settime(int fd, int flags, long[] spec, IntPtr old);
    [DllImport("libc.so.6")] public static extern int close(int fd);
}

// Known objects for the heap snapshot tests: what holds them is named by
// the static fields, so that a retention path can be checked.
static class Cache {
    public static List<byte[]> s_entries = new();
}

sealed class HeapLeaf {
    public long Value;
}

sealed class HeapNode {
    public HeapNode? Left, Right;
    public HeapLeaf Leaf = new();
}

static class Graph {
    public static HeapNode? s_root;
}

// Static fields of the same names in another class, declared with other
// types: the snapshot must still name Cache and Graph as the owners of the
// roots that hold the known objects (and Decoy as that of its dictionary).
static class Decoy {
    public static Dictionary<string, int> s_entries = new();
    public static string[]? s_root;
    public static class Nested {
        public static object? s_any;
    }
}

static class HeapSet {
    public static string Make(int n, int bytes, int nodes)
    {
        for (int i = 0; i < n; i++) {
            var a = new byte[bytes];
            a[0] = (byte)i;
            Cache.s_entries.Add(a);
        }
        // A complete binary tree in breadth-first order: node i's children are 2i+1 and 2i+2.
        var all = new HeapNode[nodes];
        for (int i = 0; i < nodes; i++) all[i] = new HeapNode();
        for (int i = 0; i < nodes; i++) {
            if (2 * i + 1 < nodes) all[i].Left = all[2 * i + 1];
            if (2 * i + 2 < nodes) all[i].Right = all[2 * i + 2];
        }
        Graph.s_root = nodes > 0 ? all[0] : null;
        Decoy.s_entries["decoy"] = n;
        GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
        return $"entries={Cache.s_entries.Count} entry_bytes={bytes} nodes={nodes}";
    }
}
