// MemSpike: a .NET program that grows and releases its managed heap on command,
// for dumpwatch's integration tests, benchmarks and demo.
//
// Commands, one per line on standard input (or ';'-separated in --script):
//   loh N          allocate N MB (10^6 bytes) as 1 MB arrays on the large object heap, keep them
//   soh N          allocate N MB as 1000-byte arrays (small object heap), keep them
//   poh N          allocate N MB as 1 MB pinned arrays (pinned object heap), keep them
//   spike N MS     loh N, hold for MS milliseconds, then release
//   release        drop everything held and run a blocking full GC
//   gc [GEN]       GC.Collect(GEN) (default 2)
//   mark MB        print "crossed ..." when the held LOH and native bytes first reach MB during a
//                  later loh/spike/native
//   pmark MB       print "pcrossed ..." when the private memory (RssAnon + VmSwap of /proc/self/status)
//                  first reaches MB during a later loh/native (checked after every MB)
//   write on|off   later loh/soh/poh allocations write every page, so they are resident as a real
//                  program's data is (off by default: the GC hands out zeroed pages untouched)
//   native N       allocate N MB outside the GC heap (1 MB blocks, every page written), keep them
//   threads N      start N more threads that sleep until exit
//   files N        open N more descriptors (/dev/null), kept until exit
//   throw N TYPE MESSAGE...   throw and catch N first-chance exceptions: TYPE timeout
//                  (System.TimeoutException), invalid (InvalidOperationException), argument,
//                  io, or pool (MemSpike.PoolExhaustedException with an inner TimeoutException);
//                  in MESSAGE "\n" is a newline and "\e" an escape character
//   order N ROUTE  add N to the counter orders.placed (meter MemSpike.Orders) with tag route=ROUTE
//   request N MS ROUTE  record N durations into the histogram request.duration (unit s, tag
//                  http.route=ROUTE): MS/N, 2*MS/N, ... MS milliseconds
//   conn N         add N (may be negative) to the up-down counter connections.active
//   queue N        set the observable gauge queue.depth to N
//   work N         allocate N 16-byte arrays, dropping each, and print "work n=N ms=..." (the
//                  elapsed time: a throughput figure for tests/bench/overhead.sh)
//   throwfor MS RATE TYPE MESSAGE...  throw RATE exceptions per second for MS milliseconds
//                  (each caught); prints "thrown first_us=... count=..." before "done"
//   churn MBPS     a background thread allocates MBPS MB/s of short-lived 1000-byte arrays (0 stops it)
//   sleep MS       wait
//   exit [CODE]    leave
// Every command answers "done <command> t_us=<unix time in microseconds>".
// "demo [MB] [PERIOD_MS]" as the first argument loops: idle, spike MB for 1 s, forever.
using System.Diagnostics;

static long NowUs() => (DateTime.UtcNow.Ticks - DateTime.UnixEpoch.Ticks) / 10;

var held = new List<object>();
var meter = new System.Diagnostics.Metrics.Meter("MemSpike.Orders", "1.0");
var orders = meter.CreateCounter<long>("orders.placed", "{order}");
var duration = meter.CreateHistogram<double>("request.duration", "s");
var conns = meter.CreateUpDownCounter<long>("connections.active", "{connection}");
long queueDepth = 0;
meter.CreateObservableGauge("queue.depth", () => Volatile.Read(ref queueDepth), "{item}");

var native = new List<IntPtr>();
var extraThreads = new List<Thread>();
var files = new List<FileStream>();
bool write = false;
long heldNative = 0, pmarkBytes = -1;
var churnRate = 0; // MB per second of garbage, read by the churn thread
Thread? churnThread = null;
long heldLoh = 0, markBytes = -1;
const int MB = 1_000_000;

long PrivateMemory()
{
    long kb = 0;
    foreach (var line in File.ReadLines("/proc/self/status"))
        if (line.StartsWith("RssAnon:") || line.StartsWith("VmSwap:"))
            kb += long.Parse(line.Split(':')[1].Trim().Split(' ')[0]);
    return kb * 1024;
}

void Marks()
{
    if (markBytes >= 0 && heldLoh + heldNative >= markBytes) {
        Console.WriteLine($"crossed bytes={heldLoh + heldNative} t_us={NowUs()}");
        markBytes = -1;
    }
    if (pmarkBytes >= 0) {
        long pm = PrivateMemory();
        if (pm >= pmarkBytes) {
            Console.WriteLine($"pcrossed bytes={pm} t_us={NowUs()}");
            pmarkBytes = -1;
        }
    }
}

void Touch(byte[] a)
{
    if (write)
        for (int j = 0; j < a.Length; j += 4096) a[j] = 1;
}

void Loh(int n)
{
    for (int i = 0; i < n; i++) {
        var a = new byte[MB];
        Touch(a);
        held.Add(a);
        heldLoh += MB;
        Marks();
    }
}

void Native(int n)
{
    for (int i = 0; i < n; i++) {
        var p = System.Runtime.InteropServices.Marshal.AllocHGlobal(MB);
        for (int j = 0; j < MB; j += 4096) System.Runtime.InteropServices.Marshal.WriteByte(p, j, 1);
        native.Add(p);
        heldNative += MB;
        Marks();
    }
}

void Release()
{
    held.Clear();
    heldLoh = 0;
    foreach (var p in native) System.Runtime.InteropServices.Marshal.FreeHGlobal(p);
    native.Clear();
    heldNative = 0;
    GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
}

bool Run(string line)
{
    var p = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
    if (p.Length == 0) return true;
    int Arg(int i, int dflt) => p.Length > i ? int.Parse(p[i]) : dflt;
    switch (p[0]) {
    case "loh": Loh(Arg(1, 1)); break;
    case "soh":
        for (long i = 0, n = Arg(1, 1) * 1000L; i < n; i++) {
            var a = new byte[1000 - 24];
            if (write) a[0] = 1;
            held.Add(a);
        }
        break;
    case "poh":
        for (int i = 0, n = Arg(1, 1); i < n; i++) {
            var a = GC.AllocateArray<byte>(MB, pinned: true);
            Touch(a);
            held.Add(a);
        }
        break;
    case "spike": Loh(Arg(1, 1)); Thread.Sleep(Arg(2, 300)); Release(); break;
    case "release": Release(); break;
    case "gc": GC.Collect(Arg(1, 2)); break;
    case "mark": markBytes = (long)Arg(1, 0) * MB; break;
    case "pmark": pmarkBytes = (long)Arg(1, 0) * MB; break;
    case "write": write = p.Length > 1 && p[1] == "on"; break;
    case "native": Native(Arg(1, 1)); break;
    case "threads":
        for (int i = 0, n = Arg(1, 1); i < n; i++) {
            var th = new Thread(() => Thread.Sleep(Timeout.Infinite)) { IsBackground = true };
            th.Start();
            extraThreads.Add(th);
        }
        break;
    case "files":
        for (int i = 0, n = Arg(1, 1); i < n; i++) files.Add(new FileStream("/dev/null", FileMode.Open, FileAccess.Read));
        break;
    case "churn":
        Volatile.Write(ref churnRate, Arg(1, 0));
        if (churnThread == null) {
            churnThread = new Thread(() => {
                // 10 ms slices: allocate rate/100 MB of garbage, then sleep out the slice.
                object? sink = null;
                while (true) {
                    var sw = Stopwatch.StartNew();
                    long bytes = (long)Volatile.Read(ref churnRate) * MB / 100;
                    for (long b = 0; b < bytes; b += 1000) sink = new byte[1000 - 24];
                    GC.KeepAlive(sink);
                    int left = 10 - (int)sw.ElapsedMilliseconds;
                    if (left > 0) Thread.Sleep(left);
                }
            }) { IsBackground = true };
            churnThread.Start();
        }
        break;
    case "throw": {
        string type = p.Length > 2 ? p[2] : "invalid", msg = MessageOf(p, 3);
        for (int i = 0, n = Arg(1, 1); i < n; i++) ThrowOne(type, msg);
        break;
    }
    case "throwfor": {
        int ms = Arg(1, 1000), rate = Arg(2, 10);
        string type = p.Length > 3 ? p[3] : "invalid", msg = MessageOf(p, 4);
        var sw = Stopwatch.StartNew();
        long first = 0, count = 0;
        while (sw.ElapsedMilliseconds < ms) {
            // Catch up to the schedule: count / rate seconds in.
            while (count < (sw.ElapsedTicks * rate / Stopwatch.Frequency) + 1 && sw.ElapsedMilliseconds < ms) {
                if (count == 0) first = NowUs();
                ThrowOne(type, msg);
                count++;
            }
            Thread.Sleep(1);
        }
        Console.WriteLine($"thrown first_us={first} count={count}");
        break;
    }
    case "order":
        orders.Add(Arg(1, 1), new KeyValuePair<string, object?>("route", p.Length > 2 ? p[2] : "/"));
        break;
    case "request": {
        int n = Arg(1, 1), ms = Arg(2, 100);
        var route = new KeyValuePair<string, object?>("http.route", p.Length > 3 ? p[3] : "/");
        for (int i = 1; i <= n; i++) duration.Record(ms * (double)i / n / 1000.0, route);
        break;
    }
    case "conn": conns.Add(Arg(1, 1)); break;
    case "queue": Volatile.Write(ref queueDepth, Arg(1, 0)); break;
    case "work": {
        long n = p.Length > 1 ? long.Parse(p[1]) : 1000000;
        object? sink = null;
        var sw = Stopwatch.StartNew();
        for (long i = 0; i < n; i++) sink = new byte[16];
        GC.KeepAlive(sink);
        Console.WriteLine($"work n={n} ms={sw.Elapsed.TotalMilliseconds:F1}");
        break;
    }
    case "sleep": Thread.Sleep(Arg(1, 0)); break;
    case "exit": Console.WriteLine($"done {line} t_us={NowUs()}"); Environment.Exit(Arg(1, 0)); break;
    default: Console.WriteLine($"error unknown command: {line}"); return true;
    }
    Console.WriteLine($"done {line} t_us={NowUs()}");
    return true;
}

Exception Make(string type, string message) => type switch {
    "timeout" => new TimeoutException(message),
    "invalid" => new InvalidOperationException(message),
    "argument" => new ArgumentException(message),
    "io" => new IOException(message),
    "pool" => new PoolExhaustedException(message, new TimeoutException("inner: " + message)),
    _ => new Exception(message),
};

void ThrowOne(string type, string message)
{
    try {
        throw Make(type, message);
    } catch (Exception) {
    }
}

string MessageOf(string[] p, int from) =>
    string.Join(' ', p.Skip(from)).Replace("\\n", "\n").Replace("\\e", "\u001b");

Console.WriteLine($"ready pid={Environment.ProcessId} runtime={Environment.Version}");
if (args.Length > 0 && args[0] == "demo") {
    int mb = args.Length > 1 ? int.Parse(args[1]) : 600;
    int period = args.Length > 2 ? int.Parse(args[2]) : 4000;
    var sw = Stopwatch.StartNew();
    while (true) {
        Thread.Sleep(period);
        Console.WriteLine($"spiking to {mb} MB of large objects for 1 s");
        Run($"spike {mb} 1000");
    }
}
if (args.Length > 1 && args[0] == "--script") {
    foreach (var cmd in args[1].Split(';')) Run(cmd.Trim());
    return;
}
while (Console.ReadLine() is string l) Run(l.Trim());

class PoolExhaustedException : Exception
{
    public PoolExhaustedException(string message, Exception inner) : base(message, inner) { }
}
