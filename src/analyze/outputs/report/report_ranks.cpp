#include "report_ranks.hpp"

#include <sstream>

#include "ranks.hpp"
#include "report_page.hpp"

namespace dftracer::analyze {

std::string with_ranks_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                               const ReadOptions& options) {
  RankReport r = analyze_ranks(files, threads, options, true);
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  const size_t at = page.rfind("</body>");
  if (ranks < 2 || at == std::string::npos) return page;
  std::ostringstream os;
  write_ranks_json(os, r, {"steps", "stragglers"});
  std::string data;
  for (char c : os.str()) {  // inside <script>: "</" must not close it early
    if (c == '<') data += "\\u003c";
    else if (c != '\n') data += c;
  }
  std::string section = kRanksSection;  // ranks_section.html, ranks_section.js
  section.replace(section.find("@RANKS@"), 7, data);
  page.insert(at, section);
  return page;
}

}  // namespace dftracer::analyze
