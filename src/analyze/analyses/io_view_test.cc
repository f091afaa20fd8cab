// The I/O view on hand-written traces: two processes' files, FH records in
// one file naming a hash used in the other, our hex fhash and DFTracer's
// numeric one, bytes from ret, small-I/O counts and bandwidth bins.
#include "io_view.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ranks.hpp"
#include "report.hpp"
#include "steps.hpp"
#include "trace_files.hpp"

using namespace dftracer::analyze;
using dftracer::analyze::testing::TempDir;
using dftracer::analyze::testing::write_file;

namespace {

std::string x(const char* name, const char* cat, int pid, long ts, int dur, const std::string& args) {
  return std::string("{\"id\":1,\"name\":\"") + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(pid) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"ph\":\"X\",\"args\":{" + args + "}}\n";
}

std::string fh(int pid, const char* path, const char* value) {
  return "{\"id\":0,\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":1,\"ph\":\"M\",\"args\":{\"name\":\"" + path + "\",\"value\":" + value + "}}\n";
}

}  // namespace

TEST(IoView, BytesTimeByFileCallProcessAndBins) {
  TempDir d;
  // Process 1: ours (hex hashes); process 2: DFTracer v2 style (numeric).
  write_file(d.file("a.pfw"), "[\n" + fh(1, "/data/a.bin", "\"00000000000000aa\"") +
                                  x("open64", "POSIX", 1, 1000000, 5, "\"fhash\":\"00000000000000aa\",\"fd\":3,\"ret\":3") +
                                  x("read", "POSIX", 1, 1000010, 7, "\"fhash\":\"00000000000000aa\",\"size\":8192,\"ret\":8192") +
                                  x("read", "POSIX", 1, 2500000, 3, "\"fhash\":\"00000000000000aa\",\"size\":8192,\"ret\":100") +
                                  x("fwrite", "STDIO", 1, 2600000, 2, "\"fhash\":\"00000000000000bb\",\"size\":10,\"ret\":10") +
                                  x("step", "app", 1, 1000000, 5000000, "") + "]\n");
  write_file(d.file("b.pfw"), "[\n" + fh(2, "/data/b.bin", "55167") +
                                  x("write", "POSIX", 2, 1200000, 9, "\"fhash\":55167,\"count\":4096,\"ret\":4096") +
                                  x("read", "POSIX", 2, 1300000, 1, "\"fhash\":55167,\"count\":4,\"ret\":-1") + "]\n");
  IoOptions o;
  o.small_bytes = 4096;
  IoView v = io_view({d.file("a.pfw"), d.file("b.pfw")}, o, 2, ReadOptions{});
  EXPECT_EQ(v.total.ops, 6u) << "the app event is not I/O";
  EXPECT_EQ(v.total.read_bytes, 8292u);
  EXPECT_EQ(v.total.write_bytes, 4106u);
  EXPECT_EQ(v.total.time_ns, 27000);
  EXPECT_EQ(v.by_file.at("/data/a.bin").read_bytes, 8292u);
  EXPECT_EQ(v.by_file.at("/data/a.bin").ops, 3u);
  EXPECT_EQ(v.by_file.at("/data/b.bin").write_bytes, 4096u);
  EXPECT_EQ(v.by_file.at("fhash:00000000000000bb").write_bytes, 10u) << "no FH record: named by its hash";
  EXPECT_EQ(v.by_call.at("read").reads, 3u);
  EXPECT_EQ(v.by_process.at("2").ops, 2u);
  // Small: the 100-byte read, the failed read and the 10-byte fwrite; 4096 is not small.
  EXPECT_EQ(v.total.small_reads, 2u);
  EXPECT_EQ(v.total.small_writes, 1u);
  ASSERT_EQ(v.by_bin.size(), 2u);  // 1 s bins: t=1.0-1.3 s and t=2.5-2.6 s
  EXPECT_EQ(v.by_bin.begin()->second.read_bytes, 8192u);
  EXPECT_EQ(v.by_bin.rbegin()->second.read_bytes, 100u);

  std::ostringstream json;
  write_io_json(json, v);
  EXPECT_NE(json.str().find("\"/data/a.bin\":{\"ops\":3,\"reads\":2,\"writes\":0,\"read_bytes\":8292"), std::string::npos)
      << json.str();
  std::ostringstream text;
  write_io_table(text, v);
  EXPECT_NE(text.str().find("by process"), std::string::npos);
}

TEST(IoView, NoIoEventsSaysSo) {
  TempDir d;
  write_file(d.file("a.pfw"), "[\n" + x("step", "app", 1, 1000, 5, "") + "]\n");
  IoView v = io_view({d.file("a.pfw")}, IoOptions{}, 1, ReadOptions{});
  std::ostringstream text;
  write_io_table(text, v);
  EXPECT_EQ(text.str(), "no POSIX or STDIO events in the input\n");
}

TEST(IoView, TheTableShowsTheTopRowsThenOneLineForTheRest) {
  TempDir d;
  // Three files read for 30, 20 and 10 us: --top 2 shows the first two, then
  // one line summing the third; 0 shows all three.
  std::string t = "[\n";
  const char* names[] = {"/data/a", "/data/b", "/data/c"};
  const char* hashes[] = {"\"00000000000000aa\"", "\"00000000000000bb\"", "\"00000000000000cc\""};
  for (int i = 0; i < 3; ++i)
    t += fh(1, names[i], hashes[i]) + x("read", "POSIX", 1, 1000 + 100 * i, 30 - 10 * i,
                                        std::string("\"fhash\":") + hashes[i] + ",\"ret\":4096");
  write_file(d.file("t.pfw"), t + "]\n");
  IoView v = io_view({d.file("t.pfw")}, IoOptions{}, 1, ReadOptions{});
  std::ostringstream top2, all;
  write_io_table(top2, v, 2);
  write_io_table(all, v, 0);
  const std::string s = top2.str();
  EXPECT_LT(s.find("/data/a "), s.find("/data/b ")) << s;
  EXPECT_EQ(s.find("/data/c "), std::string::npos) << s;
  EXPECT_NE(s.find("(1 more files)                                           1        0.004        0.000         10.0"),
            std::string::npos)
      << s;
  EXPECT_NE(all.str().find("/data/c "), std::string::npos);
  EXPECT_EQ(all.str().find("more files"), std::string::npos);
  // A control character in a file name (JSON-escaped in the trace) does not break the table's lines.
  write_file(d.file("n.pfw"), "[\n" + fh(1, "/data/a\\nb", "\"00000000000000aa\"") +
                                  x("read", "POSIX", 1, 1000, 5, "\"fhash\":\"00000000000000aa\",\"ret\":1") + "]\n");
  std::ostringstream nl;
  write_io_table(nl, io_view({d.file("n.pfw")}, IoOptions{}, 1, ReadOptions{}), 0);
  EXPECT_NE(nl.str().find("  /data/a?b "), std::string::npos) << nl.str();
}

TEST(IoView, ReportShowsTheIoSectionOnlyWithIoEvents) {
  TempDir d;
  write_file(d.file("io.pfw"), "[\n" + fh(1, "/data/a.bin", "\"00000000000000aa\"") +
                                   x("read", "POSIX", 1, 1000, 7, "\"fhash\":\"00000000000000aa\",\"size\":10,\"ret\":10") +
                                   "]\n");
  write_file(d.file("none.pfw"), "[\n" + x("step", "app", 1, 1000, 5, "") + "]\n");
  auto page = [&](const std::string& in) {
    std::string out = d.file(in + ".html");
    write_report({d.file(in)}, out, 20, 1, ReadOptions{});
    std::ifstream f(out);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  std::string with = page("io.pfw");
  EXPECT_NE(with.find("\"io\":{\"summary\":\"Data I/O: 1 calls"), std::string::npos);
  EXPECT_NE(with.find("[\"/data/a.bin\",1,"), std::string::npos);
  EXPECT_EQ(page("none.pfw").find("\"io\":{"), std::string::npos);
}

TEST(IoView, TheReportsAnswerHasAnIoLineOnlyWithIoEvents) {
  TempDir d;
  // A 100 us step holding 30 us of reads of two files; the first file's reads
  // take longer. One read is small (10 B).
  write_file(d.file("io.pfw"),
             "[\n" + fh(1, "/data/a.bin", "\"00000000000000aa\"") + fh(1, "/data/b.bin", "\"00000000000000bb\"") +
                 x("read", "POSIX", 1, 1010, 20, "\"fhash\":\"00000000000000aa\",\"size\":8192,\"ret\":8192") +
                 x("read", "POSIX", 1, 1040, 10, "\"fhash\":\"00000000000000bb\",\"size\":10,\"ret\":10") +
                 x("train_step", "app", 1, 1000, 100, "") + "]\n");
  write_file(d.file("none.pfw"), "[\n" + x("step", "app", 1, 1000, 5, "") + "]\n");
  const std::string with = write_report({d.file("io.pfw")}, d.file("io.html"), 20, 1, ReadOptions{}).answer;
  EXPECT_NE(with.find("\nI/O: data 2 POSIX/STDIO calls, 30.000 us (30.0% of the traced time); read 0.008 MiB in 2 calls, "
                      "wrote 0.000 MiB in 0 (1 under 4096 B); most data I/O time: /data/a.bin 20.000 us (1 calls)\n"),
            std::string::npos)
      << with;
  const std::string without = write_report({d.file("none.pfw")}, d.file("none.html"), 20, 1, ReadOptions{}).answer;
  EXPECT_EQ(without.find("I/O"), std::string::npos) << without;
}

// The report's I/O section comes from the report's own read of the inputs:
// the same numbers as `dftracer-analyze io` computes with its own read, and
// no extra read for it (the report's other reads: its pass, the steps'
// and the ranks' analyses, counted the same way).
TEST(IoView, ReportAggregatesIoInItsOwnPass) {
  TempDir d;
  write_file(d.file("a.pfw"), "[\n" + fh(1, "/data/a.bin", "\"00000000000000aa\"") +
                                  x("read", "POSIX", 1, 1000000, 7, "\"fhash\":\"00000000000000aa\",\"size\":8192,\"ret\":8192") +
                                  x("fwrite", "STDIO", 1, 2600000, 2, "\"fhash\":\"00000000000000bb\",\"ret\":10") +
                                  x("step", "app", 1, 1000000, 5000000, "") + "]\n");
  write_file(d.file("b.pfw"), "[\n" + fh(2, "/data/b.bin", "55167") +
                                  x("write", "POSIX", 2, 1200000, 9, "\"fhash\":55167,\"ret\":4096") + "]\n");
  const std::vector<std::string> in = {d.file("a.pfw"), d.file("b.pfw")};
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    uint64_t before = read_trace_passes();
    analyze_steps(in, threads, ReadOptions{});
    analyze_ranks(in, threads, ReadOptions{}, true);
    const uint64_t others = read_trace_passes() - before;
    std::string out = d.file("r" + std::to_string(threads) + ".html");
    before = read_trace_passes();
    write_report(in, out, 20, threads, ReadOptions{});
    EXPECT_EQ(read_trace_passes() - before, others + 1) << "one read for the groups and the I/O section together";
    std::ifstream f(out);
    std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string want;  // as the page embeds it: '<' escaped inside its <script>
    for (char c : "\"io\":" + io_report_json(io_view(in, io_report_options(), threads, ReadOptions{}), 20))
      want += c == '<' ? std::string("\\u003c") : std::string(1, c);
    EXPECT_NE(page.find(want), std::string::npos) << "the same numbers as the io command: " << want;
  }
}

// Bins that widen to fit (the report's): from 1 ms, doubling until the span
// from the first to the last data bin fits max_bins; the bytes are kept, and
// reader threads whose pieces reached different widths merge to the same bins.
TEST(IoView, BinsWidenToFitAndMergeAcrossReaderThreads) {
  TempDir d;
  std::string t = "[\n";
  // 1 KiB reads every 10 ms for 1 s, then a 5 KiB write at 1.5 s.
  for (int k = 0; k < 100; ++k) t += x("read", "POSIX", 1, 1000000 + 10000L * k, 1, "\"fhash\":\"aa\",\"ret\":1024");
  t += x("write", "POSIX", 1, 2500000, 1, "\"fhash\":\"aa\",\"ret\":5120") + "]\n";
  write_file(d.file("t.pfw"), t);
  IoOptions o;
  o.bin_ns = 1000000;
  o.max_bins = 10;
  ReadOptions small;
  small.min_piece_bytes = 256;  // several pieces, so the two threads see different spans
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    IoView v = io_view({d.file("t.pfw")}, o, threads, small);
    // 1.5 s of data: 256 ms bins give 6 (ts 1.0 .. 2.5 s since the epoch), 128 ms would give 13.
    EXPECT_EQ(v.options.bin_ns, 256000000);
    uint64_t read = 0, write = 0;
    for (const auto& [bin, s] : v.by_bin) {
      EXPECT_EQ(bin % v.options.bin_ns, 0);
      read += s.read_bytes;
      write += s.write_bytes;
    }
    EXPECT_EQ(read, 100u * 1024);
    EXPECT_EQ(write, 5120u);
    EXPECT_LE(v.by_bin.size(), 10u);
    EXPECT_EQ(v.by_bin.at(768000000).read_bytes, 3u * 1024) << "the reads at 1.00, 1.01, 1.02 s";
  }
  // Fixed bins (the io command's default) do not widen.
  IoView fixed = io_view({d.file("t.pfw")}, IoOptions{}, 1, ReadOptions{});
  EXPECT_EQ(fixed.options.bin_ns, 1000000000);
  EXPECT_EQ(fixed.by_bin.size(), 2u);
}

TEST(IoView, TheRuntimesFilesAreToldFromTheData) {
  for (const char* p : {"/usr/lib/python3.11/json/decoder.py", "/opt/py/lib/python3.11/__pycache__/os.cpython-311.pyc",
                        "/home/u/.venv/lib/python3.11/site-packages/torch/_compile.py",
                        "/home/u/.venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",
                        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "/usr/lib/python3/dist-packages/x/y.txt",
                        "/opt/py/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so",
                        "/opt/py/bin/python3.11", "/proc/self/maps", "/sys/devices/system/cpu/online", "/dev/shm/x",
                        "/out/traces/run-app-12.pfw.gz", "/etc/ld.so.cache", "/tmp/torchinductor_u/ab/cab.py",
                        "/home/u/.venv/lib/python3.11/site-packages/numpy-2.0.dist-info/METADATA",
                        "/usr/lib/ssl/openssl.cnf", "/etc/mime.types", "/usr/share/zoneinfo/UTC", "/lib64/x.conf"})
    EXPECT_EQ(io_file_kind(p), IoFileKind::Runtime) << p;
  for (const char* p : {"/data/train/000.bin", "/scratch/ckpt/model.pt", "/home/u/data/labels.csv", "/tmp/x.so.bak",
                        "/home/u/bin/python_data/x", "relative/x.bin", "fhash:00000000000000aa", "(no fhash)",
                        "/usr/share/datasets/x.csv", "/etcetera/x"})
    EXPECT_EQ(io_file_kind(p), IoFileKind::Data) << p;
}

// A run whose imports made many more calls, and took more time, than the
// reads of its dataset: the table's first file is the dataset's, the
// imports (and the directories the import system stat'ed on the way to
// them) are one runtime line, and the JSON gives each file its kind.
TEST(IoView, TheDataFilesLeadAndTheImportsAreOneLine) {
  TempDir d;
  std::string t = "[\n" + fh(1, "/data/train.bin", "\"00000000000000aa\"") +
                  fh(1, "/opt/py/lib/python3.11/site-packages/torch/_compile.py", "\"00000000000000bb\"") +
                  fh(1, "/opt/py/lib/python3.11/site-packages/torch/lib/libtorch.so", "\"00000000000000cc\"") +
                  fh(1, "/opt/py", "\"00000000000000dd\"") + fh(1, "/opt", "\"00000000000000ee\"");
  long ts = 1000;
  for (int i = 0; i < 40; ++i) {
    t += x("stat64", "POSIX", 1, ts += 100, 50, "\"fhash\":\"00000000000000bb\"");
    t += x("read", "POSIX", 1, ts += 100, 40, "\"fhash\":\"00000000000000cc\",\"size\":4096,\"ret\":4096");
    t += x("stat64", "POSIX", 1, ts += 100, 5, "\"fhash\":\"00000000000000dd\"");
    t += x("stat64", "POSIX", 1, ts += 100, 5, "\"fhash\":\"00000000000000ee\"");
  }
  for (int i = 0; i < 4; ++i) t += x("read", "POSIX", 1, ts += 100, 30, "\"fhash\":\"00000000000000aa\",\"size\":65536,\"ret\":65536");
  t += x("train_step", "app", 1, 1000, static_cast<int>(ts), "");
  write_file(d.file("run.pfw"), t + "]\n");
  IoView v = io_view({d.file("run.pfw")}, IoOptions{}, 1, ReadOptions{});
  EXPECT_EQ(v.data_files, 1u);
  EXPECT_EQ(v.runtime_files, 4u);
  EXPECT_EQ(v.data.ops, 4u);
  EXPECT_EQ(v.runtime.ops, 160u);
  EXPECT_EQ(v.file_kind.at("/opt"), IoFileKind::Runtime) << "a directory only above the installation";

  std::ostringstream table;
  write_io_table(table, v, 5);
  const std::string out = table.str();
  const size_t by_file = out.find("by data file\n");
  ASSERT_NE(by_file, std::string::npos) << out;
  std::istringstream rows(out.substr(by_file));
  std::string title, header, first;
  std::getline(rows, title);
  std::getline(rows, header);
  std::getline(rows, first);
  EXPECT_EQ(first.find("  /data/train.bin "), 0u) << out;
  EXPECT_EQ(out.find("_compile.py"), std::string::npos) << "the runtime's files are not rows: " << out;
  EXPECT_NE(out.find("Python imports and libraries (runtime I/O): 160 calls, 4000.0 us over 4 files"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("Data I/O: 4 calls, 120.0 us;"), 0u) << out;

  std::ostringstream json;
  write_io_json(json, v);
  EXPECT_NE(json.str().find("\"/data/train.bin\":{\"ops\":4,"), std::string::npos);
  EXPECT_NE(json.str().find("\"time_us\":120.000,\"kind\":\"data\"}"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"kind\":\"runtime\"}"), std::string::npos);
  EXPECT_NE(json.str().find("\"by_kind\":{\"data\":{\"ops\":4,"), std::string::npos);

  const std::string answer = write_report({d.file("run.pfw")}, d.file("r.html"), 20, 1, ReadOptions{}).answer;
  EXPECT_NE(answer.find("most data I/O time: /data/train.bin 120.000 us (4 calls); Python imports and libraries: 160 "
                        "calls, 4.000 ms"),
            std::string::npos)
      << answer;
  std::ifstream page(d.file("r.html"));
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("\"by_file\":[[\"/data/train.bin\",4,"), std::string::npos);
  EXPECT_EQ(html.find("[\"/opt/py/lib/python3.11/site-packages/torch/_compile.py\""), std::string::npos);
}

// A pyenv installation (a prefix past the short-string size) and a data file
// in the same home directory: the installation, what its build left beside
// the interpreter (bin/Modules/Setup), the directories that lead only to it
// and the home directory above it (path resolution's lstat), though a data
// file lies under it too, are the runtime's; a directory above data files
// and runtime files but no installation stays data.
TEST(IoView, ALongInstallationPrefixAndWhatItHoldsAreTheRuntimes) {
  TempDir d;
  const std::string prefix = "/root/.pyenv/versions/3.11.7";
  const std::string files[] = {prefix + "/lib/python3.11/os.py", prefix, prefix + "/bin", prefix + "/bin/Modules/Setup",
                               "/root/.pyenv", "/root", "/root/.cache/hub/config.yaml", "/proj/data/x.bin",
                               "/proj/out/run.pfw", "/proj"};
  std::string t = "[\n";
  long ts = 1000;
  for (size_t i = 0; i < std::size(files); ++i) {
    const std::string hash = "\"00000000000000a" + std::to_string(i) + "\"";
    t += fh(1, files[i].c_str(), hash.c_str());
    t += x("stat64", "POSIX", 1, ts += 100, 5, "\"fhash\":" + hash);
  }
  write_file(d.file("run.pfw"), t + "]\n");
  IoView v = io_view({d.file("run.pfw")}, IoOptions{}, 1, ReadOptions{});
  for (const std::string& runtime : {files[0], files[1], files[2], files[3], files[4], files[5], files[8]})
    EXPECT_EQ(v.file_kind.at(runtime), IoFileKind::Runtime) << runtime;
  for (const std::string& data : {files[6], files[7], files[9]}) EXPECT_EQ(v.file_kind.at(data), IoFileKind::Data) << data;
  EXPECT_EQ(v.data_files, 3u);
  EXPECT_EQ(v.runtime_files, 7u);
}

// A script's directory (sys.path[0]) holding the run's output: the import
// system stat's it at every import, which is the runtime's I/O, as is the
// working directory a package is run from (`python -m app.train`); the
// output under them, a data directory beside the script and a directory
// holding data and a directory of modules that is no package stay data.
TEST(IoView, TheDirectoryHoldingTheScriptIsTheRuntimes) {
  TempDir d;
  const std::string files[] = {"/proj",          "/proj/train.py",   "/proj/out/trainer_state.json", "/proj/out",
                               "/proj/data",     "/proj/data/x.bin", "/work",                        "/work/pkg/mod.py",
                               "/work/shard.bin", "/proj/ext/_c.so", "/proj/ext",                    "/run",
                               "/run/app/__init__.py", "/run/app/train.py", "/run/ckpt/model.pt"};
  std::string t = "[\n";
  long ts = 1000;
  for (size_t i = 0; i < std::size(files); ++i) {
    char hash[24];
    std::snprintf(hash, sizeof hash, "\"%016zx\"", 0xb00 + i);
    t += fh(1, files[i].c_str(), hash);
    t += x("stat64", "POSIX", 1, ts += 100, 5, std::string("\"fhash\":") + hash);
  }
  write_file(d.file("run.pfw"), t + "]\n");
  IoView v = io_view({d.file("run.pfw")}, IoOptions{}, 1, ReadOptions{});
  for (const std::string& runtime : {files[0], files[1], files[7], files[9], files[10], files[11], files[12]})
    EXPECT_EQ(v.file_kind.at(runtime), IoFileKind::Runtime) << runtime;
  for (const std::string& data : {files[2], files[3], files[4], files[5], files[6], files[8], files[14]})
    EXPECT_EQ(v.file_kind.at(data), IoFileKind::Data) << data;
}

// A checkpoint's file writes on the thread that saves (its calls come before
// the checkpoint event: a thread writes an event when it ends) are
// checkpoint I/O, not data: Hugging Face's Trainer saving every 3 steps read
// as 145 MiB of "data" writes. A write of another thread while the save
// runs, and one before the save, stay data.
TEST(IoView, TheFilesACheckpointEventTouchesAreCheckpointIo) {
  TempDir d;
  auto tid = [](std::string line, int t) {  // the event on thread t of process 1
    return line.replace(line.find("\"tid\":1"), 7, "\"tid\":" + std::to_string(t));
  };
  write_file(d.file("a.pfw"), "[\n" + fh(1, "/out/model.pt", "\"00000000000000aa\"") +
                                  fh(1, "/data/train.bin", "\"00000000000000bb\"") +
                                  fh(1, "/data/log.txt", "\"00000000000000cc\"") +
                                  x("write", "POSIX", 1, 1000, 5, "\"fhash\":\"00000000000000cc\",\"ret\":10") +
                                  x("open64", "POSIX", 1, 2010, 5, "\"fhash\":\"00000000000000aa\",\"ret\":3") +
                                  x("write", "POSIX", 1, 2020, 50, "\"fhash\":\"00000000000000aa\",\"ret\":1048576") +
                                  tid(x("read", "POSIX", 1, 2030, 20, "\"fhash\":\"00000000000000bb\",\"ret\":4096"), 7) +
                                  x("torch.save", "checkpoint", 1, 2000, 100, "") + "]\n");
  for (unsigned threads : {1u, 2u}) {
    IoView v = io_view({d.file("a.pfw")}, IoOptions{}, threads, ReadOptions{});
    EXPECT_EQ(v.file_kind.at("/out/model.pt"), IoFileKind::Checkpoint) << threads;
    EXPECT_EQ(v.file_kind.at("/data/train.bin"), IoFileKind::Data) << "another thread's read";
    EXPECT_EQ(v.file_kind.at("/data/log.txt"), IoFileKind::Data) << "before the save";
    EXPECT_EQ(v.checkpoint.ops, 2u);
    EXPECT_EQ(v.checkpoint.write_bytes, 1048576u);
    EXPECT_EQ(v.data.ops, 2u);
    EXPECT_EQ(v.checkpoint_files, 1u);
    std::ostringstream text, json;
    write_io_table(text, v);
    EXPECT_NE(text.str().find("Checkpoint I/O (files touched inside checkpoint events): 2 calls"), std::string::npos)
        << text.str();
    write_io_json(json, v);
    EXPECT_NE(json.str().find("\"kind\":\"checkpoint\""), std::string::npos) << json.str();
  }
}
